package main

import (
	"bufio"
	"context"

	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
)

// metric reads one unlabelled sample from a master's /metrics.
func metric(tb testing.TB, httpAddr, name string) float64 {
	tb.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return f
		}
	}
	tb.Fatalf("no %s in /metrics", name)
	return 0
}

// runPersist is one registration of fleet with a fresh scout master:
// the master is started with args, the fleet registered, the master
// stopped with SIGTERM. It returns when every server was listed and,
// with a state file and the default commit interval, persisted (changes
// written, by /metrics), and how
// long the stop took, SIGTERM to exit.
func runPersist(b *testing.B, bin string, fleet *loadgen.Fleet, rate int, src netip.Addr, args ...string) (listed, persisted, stop time.Duration) {
	args = append([]string{"-l", "127.0.0.1", "-p", "0", "--list-loopback", "--http", "127.0.0.1:0", "-v", "3"}, args...)
	m := startMaster(b, bin, args...)
	addr := netip.MustParseAddrPort(m.waitLog(b, "listening", "port", "master")["addr"].(string))
	httpAddr := m.waitLog(b, "listening", "port", "http")["addr"].(string)
	go func() {
		for range m.lines {
		}
	}()
	n := len(fleet.Addrs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	if got, err := loadgen.Populate(ctx, fleet, addr, loadgen.PopulateConfig{Rate: rate, Source: src}); err != nil || got != n {
		b.Fatalf("%d of %d listed: %v", got, n, err)
	}
	listed = time.Since(t0)
	stateful := strings.Contains(strings.Join(args, " "), "--state") && !strings.Contains(strings.Join(args, " "), "--commit-interval")
	for stateful {
		w := metric(b, httpAddr, "scout_master_state_changes_written_total")
		if w >= float64(n) {
			break
		}
		if ctx.Err() != nil {
			b.Fatalf("%v of %d changes persisted within a minute", w, n)
		}
	}
	persisted = time.Since(t0)
	ts := time.Now()
	m.cmd.Process.Signal(syscall.SIGTERM)
	if err := m.cmd.Wait(); err != nil {
		b.Fatalf("exit after SIGTERM: %v", err)
	}
	return listed, persisted, time.Since(ts)
}

// BenchmarkMaster_Persistence measures a real scout master with a state
// file at -n 16384: registrations listed and persisted per second (the
// fleet heartbeats at 8,000/s: faster, this machine drops heartbeats and
// Populate needs more rounds), the same without a state file, the
// clean stop (SIGTERM to exit) with nothing pending (default commit
// interval) and with all 16,384 servers pending (an interval of 10
// minutes), and the start from the 16,384-server state file (exec to
// listening, Open with its consistency check, Load and Restore included).
//
//	go test -run '^$' -bench Persistence -benchtime 1x -count 5 ./cmd/scout
func BenchmarkMaster_Persistence(b *testing.B) {
	const n = 16384
	rate := 8000
	bin := buildScout(b)
	fleet := crashFleet(b, n, "127.96.0.1")
	src := netip.MustParseAddr("127.97.0.1")
	for b.Loop() {
		dir := b.TempDir()
		state := filepath.Join(dir, "state.db")
		listed, persisted, stop := runPersist(b, bin, fleet, rate, src, "--state", state)
		src = netip.AddrFrom4([4]byte{127, 97, byte(src.As4()[2] + 1), 1})
		_, _, stopPending := runPersist(b, bin, fleet, rate, src, "--state", filepath.Join(dir, "pending.db"), "--commit-interval", "600000")
		src = netip.AddrFrom4([4]byte{127, 97, byte(src.As4()[2] + 1), 1})
		bare, _, _ := runPersist(b, bin, fleet, rate, src)
		src = netip.AddrFrom4([4]byte{127, 97, byte(src.As4()[2] + 1), 1})

		t0 := time.Now()
		m := startMaster(b, bin, "-l", "127.0.0.1", "-p", "0", "--list-loopback", "--state", state, "-v", "3")
		if r := m.waitLog(b, "restored")["servers"]; r != float64(n) {
			b.Fatalf("restored %v servers", r)
		}
		m.waitLog(b, "listening", "port", "master")
		start := time.Since(t0)
		m.cmd.Process.Signal(syscall.SIGTERM)
		go func() {
			for range m.lines {
			}
		}()
		m.cmd.Wait()

		per := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
		b.ReportMetric(per(listed), "listed/s")
		b.ReportMetric(per(persisted), "persisted/s")
		b.ReportMetric(per(bare), "listed/s-no-state")
		b.ReportMetric(float64(stop.Milliseconds()), "stop-ms")
		b.ReportMetric(float64(stopPending.Milliseconds()), "stop-16384-pending-ms")
		b.ReportMetric(float64(start.Milliseconds()), "start-ms")
		b.Logf("listed in %v, persisted in %v (without state: listed in %v); stop %v, with all pending %v; start from state %v",
			listed.Round(time.Millisecond), persisted.Round(time.Millisecond), bare.Round(time.Millisecond),
			stop.Round(time.Millisecond), stopPending.Round(time.Millisecond), start.Round(time.Millisecond))
	}
}
