package loadgen

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses: fields are counted from
	// the last ')'. utime 150, stime 25 ticks.
	line := "4242 (my (odd) master) S 1 4242 4242 0 -1 4194560 500 0 0 0 150 25 0 0 20 0 3 0 100 1000000 250 18446744073709551615\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 175 * clockTick; got != want {
		t.Errorf("cpu %v, want %v", got, want)
	}
	for _, bad := range []string{"", "4242 no parens", "1 (x) S 1 2 3", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 5 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseStatusRSS(t *testing.T) {
	status := "Name:\tdpmaster\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads:\t1\n"
	got, err := parseStatusRSS([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if got != 1234*1024 {
		t.Errorf("rss %d, want %d", got, 1234*1024)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tx kB\n"} {
		if _, err := parseStatusRSS([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestProc_Self(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	before, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the counter moves (one clock tick), for at most 5 s.
	after := before
	for end := time.Now().Add(5 * time.Second); after == before && time.Now().Before(end); {
		if after, err = ProcCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Errorf("cpu did not grow in 5 s: %v then %v", before, after)
	}
	if rss, err := ProcRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("rss %d, %v", rss, err)
	}
}
