package fleet

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
)

func TestVersion_SortsAsStrings(t *testing.T) {
	a, b := time.Unix(0, 999), time.Unix(1_800_000_000, 1)
	if va, vb := version(a), version(b); len(va) != 20 || len(vb) != 20 || va >= vb {
		t.Fatalf("versions %q %q", va, vb)
	}
	if version(time.Time{}) != "00000000000000000000" || fmtVersion(1<<63-1) != "09223372036854775807" {
		t.Fatal("version bounds")
	}
}

func TestCmpID(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"1-0", "1-0", 0}, {"1-1", "1-0", 1}, {"2-0", "10-0", -1}, {"", "0-1", -1}, {"0-0", "", 0}} {
		if got := cmpID(c.a, c.b); got != c.want {
			t.Errorf("cmpID(%q, %q) = %d", c.a, c.b, got)
		}
	}
}

func TestDecode_BadRecords(t *testing.T) {
	s := master.Server{Game: "Quake3Arena", Protocol: 68, MaxClients: 8, LastVerified: time.Unix(5, 0)}
	v := encode(s)
	if got, err := decode("1.2.3.4:27960", v); err != nil || got.Addr != netip.MustParseAddrPort("1.2.3.4:27960") || got.Protocol != 68 {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	if _, err := decode("1.2.3.4", v); err == nil {
		t.Error("decode took an address without a port")
	}
	for _, bad := range []string{"123", v[:25], v + "x"} {
		if _, err := decode("1.2.3.4:1", bad); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("decode(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}

// FuzzDecode: a record read from Redis never panics the instance.
func FuzzDecode(f *testing.F) {
	f.Add("1.2.3.4:27960", encode(master.Server{Game: "Quake3Arena", Protocol: 68, MaxClients: 8, Info: []master.Pair{{Key: "k", Value: "v"}}}))
	f.Add("[::1]:1", "00000000000000000001")
	f.Fuzz(func(t *testing.T, addr, v string) {
		s, err := decode(addr, v)
		if err == nil && !s.Addr.IsValid() {
			t.Fatal("a record without an address")
		}
	})
}

// The queue holds the latest write of each address, at most MaxQueued
// addresses; a write of a new address beyond that is dropped and counted.
func TestQueue_CoalescedAndBounded(t *testing.T) {
	n, err := New(Config{Redis: "redis://127.0.0.1:1/0", MaxQueued: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer n.rdb.Close()
	for i := range 5 {
		n.Put(master.Server{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{1, 2, 3, byte(i)}), 27960), LastVerified: time.Unix(int64(i), 0)})
	}
	a := netip.MustParseAddrPort("1.2.3.0:27960")
	n.Remove(master.Removal{Addr: a, LastVerified: time.Unix(9, 0)})
	if q, d := n.Queued(), n.stats.queueDropped.Load(); q != 3 || d != 2 {
		t.Fatalf("queued %d, dropped %d; want 3 and 2", q, d)
	}
	if o := n.queue[a]; o.srv != nil || o.ver != time.Unix(9, 0).UnixNano() {
		t.Fatalf("the queue holds %+v for %v, want its latest state, the removal", o, a)
	}
}
