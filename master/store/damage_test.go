package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
)

// realistic returns server i as an OpenArena server reports itself: the
// info pairs of a real infoResponse, so state files have a real size
// (2,000 of them make about 1 MB).
func realistic(i int) master.Server {
	a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	return master.Server{
		Addr: netip.AddrPortFrom(a, uint16(27960+i%7)), Listed: true,
		Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 71, Gametype: "0",
		Clients: i % 9, MaxClients: 12,
		Info: []master.Pair{
			{Key: "challenge", Value: fmt.Sprintf("%08x", i*2654435761)},
			{Key: "version", Value: "ioq3 1.36_GIT_f2c61c14-2020-02-11 linux-x86_64 Feb 11 2020"},
			{Key: "protocol", Value: "71"}, {Key: "hostname", Value: fmt.Sprintf("^1Frag^7Fest #%d | CTF DM TDM", i)},
			{Key: "mapname", Value: "oasago2"}, {Key: "clients", Value: fmt.Sprint(i % 9)},
			{Key: "g_humanplayers", Value: fmt.Sprint(i % 5)}, {Key: "sv_maxclients", Value: "12"},
			{Key: "gametype", Value: "0"}, {Key: "pure", Value: "1"}, {Key: "g_needpass", Value: "0"},
			{Key: "gamename", Value: "baseoa"},
		},
		FirstSeen: t0, LastVerified: t0.Add(time.Duration(i) * time.Millisecond),
	}
}

// writeStateFile writes n realistic servers the way the master does (in
// several commits, some servers deleted and re-added, so the file has
// freed pages too) and returns the file's bytes.
func writeStateFile(t testing.TB, path string, n int) []byte {
	t.Helper()
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const commits = 8
	for c := range commits {
		var puts []master.Server
		var dels []netip.AddrPort
		for i := c * n / commits; i < (c+1)*n/commits; i++ {
			puts = append(puts, realistic(i))
			if i%10 == 0 && c > 0 {
				dels = append(dels, realistic(i-n/commits).Addr)
			}
		}
		if err := st.Apply(puts, dels); err != nil {
			t.Fatal(err)
		}
		if len(dels) > 0 {
			back := make([]master.Server, len(dels))
			for i, a := range dels {
				back[i] = realistic(int(a.Addr().As4()[2])<<8 | int(a.Addr().As4()[3]) | int(a.Addr().As4()[1])<<16)
			}
			if err := st.Apply(back, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A damage to a real state file, and what Open must call it.
type damageCase struct {
	name string
	want Damage
	says string // in the message
	make func(t *testing.T, path string, good []byte)
}

// file makes c's damaged state file from good in a new directory and
// returns the directory, the file's path and its bytes.
func (c damageCase) file(t *testing.T, good []byte) (dir, path string, damaged []byte) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "master.db")
	c.make(t, path, good)
	damaged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path, damaged
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func garbage(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

var damages = []damageCase{
	{"truncated-to-100000-bytes", DamageCorrupt, "truncated: its pages need", func(t *testing.T, path string, good []byte) {
		write(t, path, good[:100_000])
	}},
	{"cut-in-half", DamageCorrupt, "truncated: its pages need", func(t *testing.T, path string, good []byte) {
		write(t, path, good[:len(good)/2])
	}},
	{"20KB-garbage-in-the-middle", DamageCorrupt, "is damaged: bbolt", func(t *testing.T, path string, good []byte) {
		b := bytes.Clone(good)
		copy(b[len(b)/2-10_240:], garbage(20_480, 1))
		write(t, path, b)
	}},
	{"0-bytes", DamageEmpty, "is empty (0 bytes)", func(t *testing.T, path string, _ []byte) {
		write(t, path, nil)
	}},
	{"foreign-text-file", DamageNotBolt, "is not a bbolt database", func(t *testing.T, path string, _ []byte) {
		write(t, path, []byte(strings.Repeat("listen 27950\nstate /var/lib/scout/master.db\n", 300)))
	}},
	{"foreign-random-bytes", DamageNotBolt, "is not a bbolt database", func(t *testing.T, path string, _ []byte) {
		write(t, path, garbage(64<<10, 2))
	}},
	{"foreign-bbolt-database", DamageForeign, `not a scout master state file: no format marker; its buckets are "users"`, func(t *testing.T, path string, _ []byte) {
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucket([]byte("users"))
			return b.Put([]byte("alice"), []byte("admin"))
		})
		db.Close()
	}},
	{"bbolt-with-another-format-marker", DamageForeign, `its format marker is "someone-else"`, func(t *testing.T, path string, good []byte) {
		write(t, path, good)
		setMeta(t, path, formatKey, []byte("someone-else"))
	}},
	{"newer-format-version", DamageNewer, "written by a newer scout: format version 2", func(t *testing.T, path string, good []byte) {
		write(t, path, good)
		setMeta(t, path, versionKey, binary.AppendUvarint(nil, Version+1))
	}},
}

func setMeta(t *testing.T, path string, k, v []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(k, v) }); err != nil {
		t.Fatal(err)
	}
}

var (
	goodOnce []byte
	tNow     = time.Date(2026, 11, 25, 3, 4, 5, 0, time.UTC)
)

func goodFile(t *testing.T) []byte {
	if goodOnce == nil {
		goodOnce = writeStateFile(t, filepath.Join(t.TempDir(), "good.db"), 2000)
		if len(goodOnce) < 400_000 {
			t.Fatalf("a 2,000-server state file is only %d bytes", len(goodOnce))
		}
	}
	return goodOnce
}

func TestOpen_GoodFileLoadsEveryServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	write(t, path, goodFile(t))
	st, err := Open(path, Options{Timeout: time.Second, RefuseDamaged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, corrupt, err := st.Load()
	if err != nil || corrupt != 0 || len(got) != 2000 || st.Damage() != nil {
		t.Fatalf("Load = %d servers, %d corrupt, %v; damage %v", len(got), corrupt, err, st.Damage())
	}
}

// TestOpen_DamagedFileMovedAside damages real state files in each way a
// crash or a bad disk does and checks that Open says what is wrong, keeps the damaged
// bytes in PATH.damaged-TIMESTAMP and starts with an empty database.
func TestOpen_DamagedFileMovedAside(t *testing.T) {
	good := goodFile(t)
	for _, c := range damages {
		t.Run(c.name, func(t *testing.T) {
			_, path, damaged := c.file(t, good)

			st, err := Open(path, Options{Timeout: time.Second, Now: func() time.Time { return tNow }})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer st.Close()
			d := st.Damage()
			if d == nil {
				t.Fatal("no damage reported")
			}
			t.Logf("%v", d)
			if d.Damage != c.want {
				t.Errorf("damage %v, want %v", d.Damage, c.want)
			}
			want := path + ".damaged-20261125T030405Z"
			if d.MovedTo != want || d.Path != path {
				t.Errorf("moved %s to %q, want %q", d.Path, d.MovedTo, want)
			}
			if !strings.Contains(d.Error(), c.says) {
				t.Errorf("message does not say %q", c.says)
			}
			if !strings.Contains(d.Error(), want) || !strings.Contains(d.Error(), path) {
				t.Errorf("message does not name both files: %v", d)
			}
			if moved, err := os.ReadFile(want); err != nil || !bytes.Equal(moved, damaged) {
				t.Errorf("moved-aside file differs from the damaged one (%v)", err)
			}
			got, corrupt, err := st.Load()
			if err != nil || corrupt != 0 || len(got) != 0 {
				t.Errorf("new database: Load = %d servers, %d corrupt, %v", len(got), corrupt, err)
			}
			// The new database works, and is sound next time.
			if err := st.Apply([]master.Server{realistic(1)}, nil); err != nil {
				t.Fatal(err)
			}
			st.Close()
			st, err = Open(path, Options{Timeout: time.Second, RefuseDamaged: true})
			if err != nil {
				t.Fatalf("reopening the new database: %v", err)
			}
			if got, _, _ := st.Load(); len(got) != 1 {
				t.Errorf("new database: %d servers after one Apply", len(got))
			}
		})
	}
}

func TestOpen_RefuseDamagedLeavesFileInPlace(t *testing.T) {
	good := goodFile(t)
	for _, c := range damages {
		t.Run(c.name, func(t *testing.T) {
			dir, path, damaged := c.file(t, good)
			st, err := Open(path, Options{Timeout: time.Second, RefuseDamaged: true})
			if err == nil {
				st.Close()
				t.Fatal("Open accepted a damaged file")
			}
			var d *DamagedError
			if !errors.As(err, &d) || d.Damage != c.want || d.MovedTo != "" || d.Path != path {
				t.Fatalf("err = %#v, want a *DamagedError %v left in place", err, c.want)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
				t.Error("the refused file was changed")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("%d files in the directory, want only the refused one", len(ents))
			}
		})
	}
}

func TestOpen_SecondDamageSameSecondKeepsBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	o := Options{Timeout: time.Second, Now: func() time.Time { return tNow }}
	var moved []string
	for range 2 {
		write(t, path, nil)
		st, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		moved = append(moved, st.Damage().MovedTo)
		st.Close()
	}
	if moved[0] == moved[1] {
		t.Fatalf("both moved to %s", moved[0])
	}
	for _, m := range moved {
		if _, err := os.Stat(m); err != nil {
			t.Error(err)
		}
	}
}

// A file from before the format marker is taken, and given the marker.
func TestOpen_PreMarkerFileUpgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket(bucket)
		return b.Put(key(server(1).Addr), Encode(server(1)))
	})
	db.Close()
	st, err := Open(path, Options{Timeout: time.Second, RefuseDamaged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, _, _ := st.Load(); len(got) != 1 {
		t.Fatalf("%d servers", len(got))
	}
	st.db.View(func(tx *bolt.Tx) error {
		if m := tx.Bucket(metaBucket); m == nil || string(m.Get(formatKey)) != FormatName {
			t.Error("no format marker written")
		}
		return nil
	})
}

// A lock held by another master is an error, not damage: nothing moves.
func TestOpen_LockedIsNotDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Open(path, Options{Timeout: 20 * time.Millisecond})
	var d *DamagedError
	if err == nil || errors.As(err, &d) {
		t.Fatalf("err = %v", err)
	}
	if m, _ := filepath.Glob(path + ".damaged-*"); len(m) != 0 {
		t.Errorf("moved aside: %v", m)
	}
}

// A file cut short under a running store (another program, a full disk)
// makes Load fail with an error, not kill the process with SIGBUS.
func TestLoad_FileTruncatedUnderItIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	write(t, path, goodFile(t))
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := os.Truncate(path, 3*4096); err != nil {
		t.Fatal(err)
	}
	_, _, err = st.Load()
	if err == nil {
		t.Fatal("Load of a truncated file succeeded")
	}
	t.Log(err)
}

func TestApply_OneTransaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	txid := func() (id int) {
		st.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	var puts []master.Server
	for i := range 1000 {
		puts = append(puts, realistic(i))
	}
	if err := st.Apply(puts, nil); err != nil {
		t.Fatal(err)
	}
	before := txid()
	if err := st.Apply(puts[500:], []netip.AddrPort{puts[0].Addr, puts[1].Addr, netip.MustParseAddrPort("192.0.2.1:1")}); err != nil {
		t.Fatal(err)
	}
	if n := txid() - before; n != 1 {
		t.Errorf("Apply of 500 puts and 3 deletes took %d transactions", n)
	}
	got, _, _ := st.Load()
	if len(got) != 998 {
		t.Errorf("%d servers, want 998", len(got))
	}
}

// FuzzOpen damages a real state file at a place and with bytes the fuzzer
// chooses, and cuts it where it chooses: Open must never crash, and a file
// it accepts must load.
func FuzzOpen(f *testing.F) {
	f.Add(uint32(0), []byte{}, uint32(0))
	f.Add(uint32(50_000), garbage(20_480, 1), uint32(0))
	f.Add(uint32(0), []byte{}, uint32(100_000))
	f.Add(uint32(4096), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint32(0))
	f.Add(uint32(0), []byte{}, uint32(8192))
	var good []byte
	f.Fuzz(func(t *testing.T, at uint32, junk []byte, cut uint32) {
		if good == nil {
			good = writeStateFile(t, filepath.Join(t.TempDir(), "good.db"), 500)
		}
		b := bytes.Clone(good)
		if int(at) < len(b) {
			copy(b[at:], junk)
		}
		if cut > 0 && int(cut) < len(b) {
			b = b[:cut]
		}
		path := filepath.Join(t.TempDir(), "master.db")
		write(t, path, b)
		st, err := Open(path, Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, _, err := st.Load(); err != nil {
			t.Fatalf("Load after Open accepted the file: %v", err)
		}
	})
}

// TestOpen_GarbageAnywhereNeverCrashes overwrites a real state file with
// garbage at offsets across the whole file (page-aligned and not; random
// bytes, zeros and 0xff): Open either takes the file, and then it loads,
// or reports it damaged. A crash fails the whole test binary.
func TestOpen_GarbageAnywhereNeverCrashes(t *testing.T) {
	good := writeStateFile(t, filepath.Join(t.TempDir(), "good.db"), 500)
	fills := [][]byte{garbage(3000, 3), make([]byte, 3000), bytes.Repeat([]byte{0xff}, 3000)}
	dir := t.TempDir()
	taken, damaged := 0, 0
	for i, at := 0, 0; at < len(good); i, at = i+1, at+4096*3+1234*(i%4) {
		b := bytes.Clone(good)
		copy(b[at:], fills[i%len(fills)])
		path := filepath.Join(dir, fmt.Sprintf("%d.db", i))
		write(t, path, b)
		st, err := Open(path, Options{Timeout: time.Second})
		if err != nil {
			t.Fatalf("offset %d: %v", at, err)
		}
		if st.Damage() != nil {
			damaged++
		} else {
			taken++
		}
		if _, _, err := st.Load(); err != nil {
			t.Errorf("offset %d: Load after Open: %v", at, err)
		}
		st.Close()
	}
	t.Logf("%d damaged files taken as sound (garbage on free pages or inside values), %d reported", taken, damaged)
	if damaged == 0 {
		t.Error("no damage found anywhere")
	}
}
