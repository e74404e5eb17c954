package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/freeport"
	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
	"github.com/scout-discovery/scout/masterd"
)

// crashFleet is the emulated servers of the crash test: loopback
// addresses no other test of the repository uses.
func crashFleet(t testing.TB, n int, base string) *loadgen.Fleet {
	t.Helper()
	f := newFleet(t, loadgen.FleetConfig{Servers: n, Base: netip.MustParseAddr(base)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done; f.Close() })
	return f
}

// newFleet opens the fleet cfg on a first port that no other process
// holds (cfg.Port is drawn; a fixed one collided with the same test run
// by another test process: "bind 127.93.0.1:29100: address already in
// use").
func newFleet(t testing.TB, cfg loadgen.FleetConfig) *loadgen.Fleet {
	t.Helper()
	span := cfg.PerAddr
	if span == 0 {
		span = loadgen.DefaultPerAddr
	}
	var f *loadgen.Fleet
	err := freeport.Retry(t, span-1, func(port uint16) (err error) {
		cfg.Port = port
		f, err = loadgen.NewFleet(cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// listedNow is the master's /servers list, and a time after its
// servers were verified.
func listedNow(t *testing.T, httpAddr string) (map[netip.AddrPort]bool, time.Time) {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/servers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []masterd.ServerJSON
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	set := make(map[netip.AddrPort]bool, len(list))
	for _, s := range list {
		set[netip.MustParseAddrPort(s.Address)] = true
	}
	return set, at
}

// commitLog collects the "state written" lines of a master's log: the
// start of each commit that completed (its log time minus its duration).
// Every other line is drained, so the master never blocks on its stderr.
type commitLog struct {
	starts chan time.Time
	done   chan struct{}
}

func watchCommits(c *child) *commitLog {
	l := &commitLog{starts: make(chan time.Time, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for m := range c.lines {
			if m["msg"] != "state written" {
				continue
			}
			at, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"]))
			took, ok := m["took"].(float64) // slog's JSON writes a Duration in nanoseconds
			if err1 == nil && ok {
				l.starts <- at.Add(-time.Duration(took))
			}
		}
	}()
	return l
}

// stateMaster is a real scout master keeping its state in a file, with
// its UDP and HTTP ports on loopback, whose commits are watched.
type stateMaster struct {
	*child
	args     []string // the arguments it was started with
	addr     netip.AddrPort
	httpAddr string
	commits  *commitLog
}

func startStateMaster(t *testing.T, bin, state string) *stateMaster {
	t.Helper()
	// The test polls /servers as fast as it answers: no per-client limit.
	args := []string{"-l", "127.0.0.1", "-p", "0", "--list-loopback", "--state", state, "--http", "127.0.0.1:0", "--http-no-limit"}
	m := &stateMaster{child: startMaster(t, bin, args...), args: args}
	m.addr = netip.MustParseAddrPort(m.waitLog(t, "listening", "port", "master")["addr"].(string))
	m.httpAddr = m.waitLog(t, "listening", "port", "http")["addr"].(string)
	m.commits = watchCommits(m.child)
	return m
}

// kill9 kills the master with SIGKILL, returns when it has exited and its
// log is read, and says when the signal was sent.
func (m *stateMaster) kill9(t *testing.T) time.Time {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	m.cmd.Wait()
	<-m.commits.done
	return killed
}

func countIn(set map[netip.AddrPort]bool, addrs []netip.AddrPort) int {
	n := 0
	for _, a := range addrs {
		if set[a] {
			n++
		}
	}
	return n
}

// TestMaster_Kill9KeepsVerifiedServers kills a real scout master with
// SIGKILL while it registers and commits servers, restarts it on the same
// state file and checks that every server it had listed before the start
// of its last completed commit is listed again: the group-commit contract
// of master/store, on a real process and a real disk. 2,000 servers are
// registered and listed, then 2,000 more heartbeat while the master is
// polled; the kill comes when a commit that started after the first 2,000
// were listed has completed and half of the second wave is listed.
func TestMaster_Kill9KeepsVerifiedServers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := buildScout(t)
	state := filepath.Join(t.TempDir(), "state.db")
	m1 := startStateMaster(t, bin, state)
	addr, httpAddr, commits := m1.addr, m1.httpAddr, m1.commits

	wave1 := crashFleet(t, 2000, "127.93.0.1")
	wave2 := crashFleet(t, 2000, "127.94.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := loadgen.Populate(ctx, wave1, addr, loadgen.PopulateConfig{Source: netip.MustParseAddr("127.95.0.1")}); err != nil {
		t.Fatal(err)
	}
	type snapshot struct {
		at  time.Time
		set map[netip.AddrPort]bool
	}
	set, at := listedNow(t, httpAddr)
	if n := countIn(set, wave1.Addrs()); n != 2000 {
		t.Fatalf("after registration %d of 2,000 listed", n)
	}
	snaps := []snapshot{{at, set}}
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go wave2.Heartbeat(hbCtx, addr, nil, 1000)

	// Poll until a commit begun after the first snapshot has completed
	// and the second wave is half listed, then kill at once.
	var lastStart time.Time
	for {
		for len(commits.starts) > 0 {
			lastStart = <-commits.starts
		}
		set, at := listedNow(t, httpAddr)
		snaps = append(snaps, snapshot{at, set})
		if lastStart.After(snaps[0].at) && countIn(set, wave2.Addrs()) >= 1000 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no commit completed after the first 2,000 were listed, or the second wave not listed, within %v", waitBound)
		}
	}
	killed := m1.kill9(t)
	stopHB()
	for len(commits.starts) > 0 {
		lastStart = <-commits.starts
	}
	// The newest list taken before the last completed commit began: each
	// of its servers had been verified before that commit took the
	// pending changes, so all must be on disk.
	durable := snaps[0]
	for _, s := range snaps {
		if s.at.Before(lastStart) {
			durable = s
		}
	}
	listedAtKill := snaps[len(snaps)-1].set

	m2 := startMaster(t, bin, append(m1.args, "-v", "3")...)
	restored := m2.waitLog(t, "restored")
	if restored["corrupt"] != float64(0) {
		t.Errorf("restored: %v", restored)
	}
	http2 := m2.waitLog(t, "listening", "port", "http")["addr"].(string)
	go func() {
		for range m2.lines {
		}
	}()
	after, _ := listedNow(t, http2)
	lost := 0
	for a := range durable.set {
		if !after[a] {
			lost++
		}
	}
	t.Logf("listed at the kill %d; durable by the master's log (listed %v before the kill, before the last completed commit began) %d; listed after the restart %d, of them %d of wave 1",
		len(listedAtKill), killed.Sub(durable.at).Round(time.Millisecond), len(durable.set), len(after), countIn(after, wave1.Addrs()))
	if lost > 0 {
		t.Errorf("%d of the %d servers listed %v before the kill are lost", lost, len(durable.set), killed.Sub(durable.at).Round(time.Millisecond))
	}
	if n := countIn(after, wave1.Addrs()); n != 2000 {
		t.Errorf("%d of the first 2,000 servers listed after the restart", n)
	}
	if n := countIn(after, wave1.Addrs()) + countIn(after, wave2.Addrs()); n != len(after) {
		t.Errorf("%d servers after the restart that were never registered", len(after)-n)
	}
}

// realStateFile writes the state file of a master that listed n servers
// with a full ioquake3 info string (about 700 bytes each on disk) and
// returns its bytes.
func realStateFile(t *testing.T, n int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "good.db")
	st, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var puts []master.Server
	for i := range n {
		puts = append(puts, master.Server{
			Addr:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, byte(i >> 8), byte(i)}), 27960),
			Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68, MaxClients: 16,
			Info: []master.Pair{{Key: "hostname", Value: fmt.Sprintf("server %d of a real master", i)},
				{Key: "version", Value: "ioq3 1.36_GIT_f2c61c14-2020-02-11 linux-x86_64 Feb 11 2020"},
				{Key: "mapname", Value: "q3dm17"}, {Key: "gamename", Value: "baseq3"}, {Key: "sv_maxclients", Value: "16"}},
			FirstSeen: time.Now(), LastVerified: time.Now(),
		})
	}
	if err := st.Apply(puts, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMaster_DamagedStateFile gives a real scout master the damaged state
// files a crash or a bad disk leaves (a real one truncated to 100,000 bytes, cut in half, 20
// KB of garbage in its middle; a 0-byte file; a text file): it never
// panics. By default it logs the damage, moves the file aside and serves;
// with --refuse-damaged-state it exits with status 1, says what is wrong
// and leaves the file in place.
func TestMaster_DamagedStateFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := buildScout(t)
	good := realStateFile(t, 2000)
	if len(good) < 400_000 {
		t.Fatalf("state file of 2,000 servers is %d bytes", len(good))
	}
	junk := make([]byte, 20_480)
	for i := range junk {
		junk[i] = byte(i*7919 + i>>8)
	}
	mid := append(append(append([]byte(nil), good[:len(good)/2-10_240]...), junk...), good[len(good)/2+10_240:]...)
	for _, c := range []struct {
		name, says, damage string
		file               []byte
	}{
		{"truncated-to-100000-bytes", "truncated", "corrupt", good[:100_000]},
		{"cut-in-half", "truncated", "corrupt", good[:len(good)/2]},
		{"20KB-garbage-in-the-middle", "is damaged", "corrupt", mid},
		{"0-bytes", "is empty (0 bytes)", "empty file", nil},
		{"text", "is not a bbolt database", "not a bbolt database", []byte(strings.Repeat("not a database\n", 1000))},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(state, c.file, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "master", "-l", "127.0.0.1", "-p", "0", "--state", state, "--refuse-damaged-state").CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), c.says) || strings.Contains(string(out), "panic") {
				t.Fatalf("--refuse-damaged-state: exit %v, output:\n%s", err, out)
			}
			if now, _ := os.ReadFile(state); string(now) != string(c.file) {
				t.Fatal("the refused file was changed")
			}
			if m, _ := filepath.Glob(state + ".damaged-*"); len(m) != 0 {
				t.Fatalf("refused file moved: %v", m)
			}

			m := startMaster(t, bin, "-l", "127.0.0.1", "-p", "0", "--state", state)
			d := m.waitLog(t, "the state file was damaged")
			moved, _ := d["moved_to"].(string)
			if !strings.HasPrefix(moved, state+".damaged-") || d["damage"] != c.damage || !strings.Contains(fmt.Sprint(d["err"]), c.says) {
				t.Errorf("log: %v", d)
			}
			if kept, _ := os.ReadFile(moved); string(kept) != string(c.file) {
				t.Error("the moved-aside file is not the damaged one")
			}
			if r := m.waitLog(t, "restored"); r["servers"] != float64(0) {
				t.Errorf("restored: %v", r)
			}
			m.waitLog(t, "listening", "port", "master")
			m.cmd.Process.Signal(syscall.SIGTERM)
			if err := m.cmd.Wait(); err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
		})
	}
}
