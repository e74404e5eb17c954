package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
)

var t0 = time.Unix(1_800_000_000, 123)

func server(i int) master.Server {
	return master.Server{
		Addr:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 27960),
		Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 71,
		Gametype: "0", Clients: i % 9, MaxClients: 8,
		Info:      []master.Pair{{Key: "hostname", Value: fmt.Sprintf("srv-%d", i)}, {Key: "mapname", Value: "oa_dm1"}, {Key: "g_needpass"}},
		FirstSeen: t0, LastVerified: t0.Add(time.Duration(i) * time.Second),
	}
}

func TestEncodeDecode_RoundTrip(t *testing.T) {
	for _, s := range []master.Server{server(0), server(7), {Listed: true, Game: "x"}} {
		got, err := Decode(Encode(s))
		if err != nil {
			t.Fatal(err)
		}
		got.Addr = s.Addr
		if !equal(got, s) {
			t.Errorf("got %+v, want %+v", got, s)
		}
	}
}

func equal(a, b master.Server) bool {
	return a.Addr == b.Addr && a.Game == b.Game && a.Family == b.Family && a.Protocol == b.Protocol &&
		a.Gametype == b.Gametype && a.Clients == b.Clients && a.MaxClients == b.MaxClients &&
		a.FirstSeen.Equal(b.FirstSeen) && a.LastVerified.Equal(b.LastVerified) && slices.Equal(a.Info, b.Info)
}

func TestDecode_EveryTruncationFails(t *testing.T) {
	rec := Encode(server(3))
	for i := range len(rec) {
		if _, err := Decode(rec[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("prefix %d: err = %v", i, err)
		}
	}
	if _, err := Decode(append(rec, 0)); !errors.Is(err, ErrCorrupt) {
		t.Error("trailing byte accepted")
	}
	bad := slices.Clone(rec)
	bad[0] = 2
	if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
		t.Error("unknown version accepted")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(server(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(Encode(s))
		if err != nil || !equal(again, s) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestStore_PutLoadDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := st.Put(server(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(server(2).Addr); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	st, err = Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, corrupt, err := st.Load()
	if err != nil || corrupt != 0 || len(got) != 4 {
		t.Fatalf("Load = %d servers, %d corrupt, %v", len(got), corrupt, err)
	}
	for _, s := range got {
		if s.Addr == server(2).Addr {
			t.Error("deleted server came back")
		}
	}
}

func TestStore_CorruptRecordsSkippedAndCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.db")
	st, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Put(server(0))
	st.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		b.Put(key(server(1).Addr), []byte{9, 9, 9})        // unknown version
		b.Put([]byte("not an address"), Encode(server(2))) // bad key
		b.Put(key(server(3).Addr), Encode(server(3))[:5])  // truncated
		return nil
	})
	got, corrupt, err := st.Load()
	if err != nil || corrupt != 3 || len(got) != 1 || got[0].Addr != server(0).Addr {
		t.Errorf("Load = %v, %d corrupt, %v", got, corrupt, err)
	}
}

// The child half of TestStore_SurvivesKill9: writes servers, reports each
// returned Put on stdout, then dies without Close.
const childEnv = "SCOUT_STORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		runChild(path, os.Getenv(childEnv+"_MODE"))
		return
	}
	os.Exit(m.Run())
}

func runChild(path, mode string) {
	st, err := Open(path, Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	for i := range 20 {
		if err := st.Put(server(i)); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("put", i)
	}
	if err := st.Delete(server(0).Addr); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("done")
	if mode == "exit" {
		os.Exit(1) // no Close
	}
	// Wait to be killed: block on stdin, which the parent never closes
	// before sending SIGKILL.
	bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(4)
}

func TestStore_SurvivesKill9(t *testing.T) {
	for _, mode := range []string{"exit", "kill"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "master.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+path, childEnv+"_MODE="+mode)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			puts := 0
			for sc.Scan() {
				line := sc.Text()
				if line == "done" {
					break
				}
				if len(line) > 4 && line[:4] == "put " {
					n, _ := strconv.Atoi(line[4:])
					puts = n + 1
					continue
				}
				t.Fatalf("child: %s", line)
			}
			if mode == "kill" {
				if err := cmd.Process.Kill(); err != nil { // SIGKILL
					t.Fatal(err)
				}
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child ended with %v, want a failure exit", err)
			}
			if puts != 20 {
				t.Fatalf("child reported %d puts", puts)
			}

			st, err := Open(path, Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, corrupt, err := st.Load()
			if err != nil || corrupt != 0 {
				t.Fatalf("Load: %d corrupt, %v", corrupt, err)
			}
			if len(got) != 19 {
				t.Fatalf("after %s: %d servers, want 19", mode, len(got))
			}
			// And the registry lists them again at once.
			ch, _ := master.NewChallenger(master.DefaultRotationPeriod, zeroReader{})
			r, err := master.NewRegistry(master.Config{}, ch)
			if err != nil {
				t.Fatal(err)
			}
			now := t0.Add(time.Hour)
			if n, skipped := r.Restore(now, got); n != 19 || len(skipped) != 0 {
				t.Fatalf("Restore = %d, %v", n, skipped)
			}
			sel, _ := r.Select(now, master.Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Full: true}, nil)
			if len(sel) != 19 {
				t.Errorf("Select after restart = %d servers", len(sel))
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestStore_BackupWhileWriting copies the database while another goroutine
// commits, and opens the copy: it holds every server committed before the
// copy began and is a sound state file.
func TestStore_BackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := backupServers(0, 500)
	if err := s.Apply(before, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range 20 {
			if err := s.Apply(backupServers(500+i*50, 50), nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	copyPath := filepath.Join(dir, "copy.db")
	f, err := os.Create(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	var announced int64
	err = s.Backup(func(size int64, write func(io.Writer) (int64, error)) error {
		announced = size
		n, err := write(f)
		if err == nil && n != size {
			err = fmt.Errorf("wrote %d bytes, announced %d", n, size)
		}
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, err := Open(copyPath, Options{RefuseDamaged: true})
	if err != nil {
		t.Fatalf("the copy (%d bytes) does not open: %v", announced, err)
	}
	defer c.Close()
	got, corrupt, err := c.Load()
	if err != nil || corrupt != 0 {
		t.Fatalf("Load of the copy: %d corrupt, %v", corrupt, err)
	}
	have := map[netip.AddrPort]bool{}
	for _, srv := range got {
		have[srv.Addr] = true
	}
	for _, srv := range before {
		if !have[srv.Addr] {
			t.Fatalf("the copy lacks %v, committed before it began", srv.Addr)
		}
	}
	if len(got) < len(before) || len(got) > len(before)+1000 {
		t.Fatalf("the copy holds %d servers", len(got))
	}
}

// backupServers returns n servers numbered from first.
func backupServers(first, n int) []master.Server {
	out := make([]master.Server, n)
	for i := range out {
		k := first + i
		out[i] = master.Server{
			Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(k % 250)}), uint16(27960+k)),
			Game: "Quake3Arena", Protocol: 68, MaxClients: 16,
			FirstSeen: time.Unix(1_800_000_000, 0), LastVerified: time.Unix(1_800_000_000, 0),
		}
	}
	return out
}
