package rttcache

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary a writer that saves a growing memory
// over and over, printing "saved N" after each save.
const childEnv = "SCOUT_RTTCACHE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild saves, run after run, a memory of 20,000 groups (about a
// megabyte), each run's samples different, until it is killed.
func crashChild(path string) {
	c := New()
	outs := make([]Outcome, 20000)
	for n := 0; ; n++ {
		for i := range outs {
			outs[i] = Outcome{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), 27960), RTT: time.Duration(10+n%50+i%100) * time.Millisecond, Answered: true}
		}
		c.Record(t0.Add(time.Duration(n)*time.Second), nil, outs)
		if err := Save(path, c); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("saved", n)
	}
}

// TestSave_SurvivesKill9: a writer killed (SIGKILL) at any point of a
// save leaves a memory that loads, the one of its last save or the
// next, never a damaged one.
func TestSave_SurvivesKill9(t *testing.T) {
	for round := range 8 {
		path := filepath.Join(t.TempDir(), FileName)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		last := -1
		for sc.Scan() {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "saved %d", &n); err != nil {
				t.Fatalf("child: %q", sc.Text())
			}
			last = n
			if n >= 1+round { // killed while it writes the next save
				break
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		c, err := Load(path)
		if err != nil {
			t.Fatalf("round %d, killed after save %d: %v", round, last, err)
		}
		if c.Len() != 20000 {
			t.Fatalf("round %d: %d groups", round, c.Len())
		}
		if _, err := os.Stat(path + DamagedSuffix); err == nil {
			t.Fatalf("round %d: a damaged file was moved aside", round)
		}
		// A temporary file the kill left is removed by a later save once
		// it is StaleTemp old.
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+FileName+".*"))
		for _, f := range left {
			old := time.Now().Add(-StaleTemp - time.Minute)
			os.Chtimes(f, old, old)
		}
		if err := Save(path, c); err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+FileName+".*")); len(left) != 0 {
			t.Fatalf("round %d: stale temporary files kept: %v", round, left)
		}
	}
}
