package store

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestHistory_RoundTripPruneReopen: days written with the servers'
// commits come back after a close and reopen; days before keepFrom go in
// the same commit; a damaged record is skipped and counted.
func TestHistory_RoundTripPruneReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddrPort("192.0.2.1:27960")
	b := netip.MustParseAddrPort("[2001:db8::1]:27960")
	counts := func(c byte) []byte { return bytes.Repeat([]byte{c}, 288) }
	if days, _, err := st.LoadHistory(); err != nil || len(days) != 0 {
		t.Fatalf("new file: %v %v", days, err)
	}
	if err := st.ApplyWithHistory(nil, nil, []HistoryDay{{a, 20000, counts(1)}, {b, 20000, counts(2)}, {a, -3, counts(9)}}, -5); err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyWithHistory(nil, nil, []HistoryDay{{a, 20001, counts(3)}, {a, 20000, counts(4)}}, 20000); err != nil {
		t.Fatal(err)
	}
	// Damaged records, written behind the store's back.
	if err := st.db.Update(func(tx *bolt.Tx) error {
		h := tx.Bucket(historyBucket)
		h.Put(historyKey(20001, b), []byte{7, 1, 2})        // unknown version
		h.Put(append(dayKey(20001), 1, 2, 3), []byte{1, 0}) // bad address
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	days, corrupt, err := st.LoadHistory()
	if err != nil || corrupt != 2 || len(days) != 3 {
		t.Fatalf("%d days, %d corrupt, %v", len(days), corrupt, err)
	}
	want := map[[2]any]byte{{a, int32(20000)}: 4, {b, int32(20000)}: 2, {a, int32(20001)}: 3}
	for _, d := range days {
		c, ok := want[[2]any{d.Addr, d.Day}]
		if !ok || !bytes.Equal(d.Counts, counts(c)) {
			t.Errorf("day %v %d: %v", d.Addr, d.Day, d.Counts[:4])
		}
	}
}

// BenchmarkHistory_FileBytesPerServer reports the state file's growth per
// server with 8 days of history (288 counts a day) of 5,000 servers,
// written in commits of 100 servers:
// go test -run '^$' -bench FileBytesPerServer ./master/store
func BenchmarkHistory_FileBytesPerServer(b *testing.B) {
	const servers, days = 5000, 8
	for range b.N {
		path := filepath.Join(b.TempDir(), "state.db")
		st, err := Open(path, Options{Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		size := func() int64 {
			var n int64
			st.db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
			return n
		}
		empty := size()
		counts := bytes.Repeat([]byte{3}, 288)
		for i := 0; i < servers; i += 100 {
			var batch []HistoryDay
			for j := i; j < i+100; j++ {
				a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(j >> 8), byte(j)}), 27960)
				for d := range days {
					batch = append(batch, HistoryDay{a, int32(20000 + d), counts})
				}
			}
			if err := st.ApplyWithHistory(nil, nil, batch, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(size()-empty)/servers, "B/server")
		st.Close()
	}
}

// TestPlayers_RoundTripDeleteReopen: players' records written with a
// commit come back after a close and reopen, a nil value deletes one,
// records beyond the bounds are neither written nor loaded.
func TestPlayers_RoundTripDeleteReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ps, _, err := st.LoadPlayers(); err != nil || len(ps) != 0 {
		t.Fatalf("new file: %v %v", ps, err)
	}
	long := string(bytes.Repeat([]byte{'x'}, MaxPlayerKeyBytes+1))
	if err := st.ApplyWithPlayers(nil, nil, nil, 0, []PlayerRecord{{"Bob", []byte{1, 2}}, {"\xc1lice", []byte{3}}, {"Gone", []byte{4}},
		{long, []byte{5}}, {"", []byte{6}}, {"Huge", make([]byte, MaxPlayerValueBytes+1)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyWithPlayers(nil, nil, nil, 0, []PlayerRecord{{"Gone", nil}, {"Bob", []byte{7}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(playersBucket).Put([]byte("Damaged"), nil) // an empty value, behind the store's back
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = Open(path, Options{Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps, corrupt, err := st.LoadPlayers()
	if err != nil || corrupt != 1 || len(ps) != 2 || ps[0].Key != "Bob" || !bytes.Equal(ps[0].Value, []byte{7}) ||
		ps[1].Key != "\xc1lice" || !bytes.Equal(ps[1].Value, []byte{3}) {
		t.Fatalf("%+v, %d corrupt, %v", ps, corrupt, err)
	}
}
