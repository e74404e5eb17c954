package world

import (
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"
)

// delayRun is what one accuracy run measured: RTT errors (measured minus
// injected), timed by the kernel and at the client's read, both sorted.
type delayRun struct {
	errs, readErrs []time.Duration
	stats          Stats
}

// measureDelays probes a world with delays of 10 to 400 ms at about 1,000
// probes a second, as the discovery benchmark does, and returns the RTT a
// client measures against the RTT the world injects. Every probe must be
// answered.
func measureDelays(tb testing.TB) delayRun {
	tb.Helper()
	const n = 1500
	w, err := Generate(Spec{Servers: n, Games: Mix{{OA, 1}}, RTTMin: 10 * time.Millisecond, RTTMax: 400 * time.Millisecond, Seed: 9})
	if err != nil {
		tb.Fatal(err)
	}
	defer TuneRuntime()() // as scout-lab world runs
	e, stop := startWorld(tb, w, Config{RealTime: true})
	c := timestampingClient(tb)
	table := e.Table()
	injected := map[netip.AddrPort]time.Duration{}
	sentAt := map[netip.AddrPort]time.Time{}
	for _, s := range w.Servers {
		injected[s.Public] = time.Duration(s.Link.RTT)
	}
	type reply struct {
		from netip.AddrPort
		at   time.Time // kernel receive time
		read time.Time // when the reader got it
	}
	replies := make(chan reply, n)
	go func() {
		buf, oob := make([]byte, 2048), make([]byte, 128)
		for {
			_, oobn, _, from, err := c.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				close(replies)
				return
			}
			now := time.Now()
			pub, _ := table.Public(from)
			replies <- reply{pub, arrival(now, oob[:oobn]), now}
		}
	}()
	req := []byte("\xff\xff\xff\xffgetinfo acc")
	start := time.Now()
	for i, s := range w.Servers {
		// Pace at 1,000 probes/s without sleeping in a loop: wait for the
		// slot of probe i.
		if d := time.Until(start.Add(time.Duration(i) * time.Millisecond)); d > 0 {
			<-time.After(d)
		}
		sentAt[s.Public] = time.Now()
		lo, _ := table.Loopback(s.Public)
		if _, err := c.WriteToUDPAddrPort(req, lo); err != nil {
			tb.Fatal(err)
		}
	}
	var r delayRun
	for len(r.errs) < n {
		rep, ok := <-replies
		if !ok {
			break
		}
		r.errs = append(r.errs, rep.at.Sub(sentAt[rep.from])-injected[rep.from])
		r.readErrs = append(r.readErrs, rep.read.Sub(sentAt[rep.from])-injected[rep.from])
	}
	stop()
	if len(r.errs) < n {
		tb.Fatalf("%d of %d replies", len(r.errs), n)
	}
	slices.Sort(r.errs)
	slices.Sort(r.readErrs)
	r.stats = e.Stats()
	return r
}

// quantile is the nearest-rank q quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

// TestEmulator_DelayAccuracy checks what holds whatever the machine's
// load: every probe is answered and no reply comes before its injected
// RTT. How close to it replies come is measured, not asserted:
// BenchmarkEmulator_DelayAccuracy.
func TestEmulator_DelayAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 2 s of real time")
	}
	r := measureDelays(t)
	t.Logf("RTT error (measured - injected): min %v p50 %v p99 %v max %v", r.errs[0], quantile(r.errs, 0.5), quantile(r.errs, 0.99), r.errs[len(r.errs)-1])
	if r.errs[0] < 0 {
		t.Errorf("a reply came %v before its injected RTT", -r.errs[0])
	}
}

// BenchmarkEmulator_DelayAccuracy reports the RTT error of 1,500 probes
// at 1,000/s (RTTs 10-400 ms) per run, in microseconds: err-p50-us and
// err-p99-us timed by the kernel (SO_TIMESTAMPNS), read-p99-us timed when
// the client reads the reply, and the emulator's own send lateness
// (late-p99-us, an upper bound within HistogramBucket). The figures and
// their spread are in the package doc ("Delay accuracy"):
//
//	go test -run '^$' -bench DelayAccuracy -benchtime 1x -count 5 ./lab/world
func BenchmarkEmulator_DelayAccuracy(b *testing.B) {
	var r delayRun
	for range b.N {
		r = measureDelays(b)
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(quantile(r.errs, 0.5)), "err-p50-us")
	b.ReportMetric(us(quantile(r.errs, 0.99)), "err-p99-us")
	b.ReportMetric(us(r.errs[len(r.errs)-1]), "err-max-us")
	b.ReportMetric(us(quantile(r.readErrs, 0.99)), "read-p99-us")
	b.ReportMetric(us(r.stats.LatenessP99), "late-p99-us")
}

// timestampingClient is a loopback socket with kernel receive timestamps.
func timestampingClient(t testing.TB) *net.UDPConn {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
	if serr != nil {
		t.Fatal(serr)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}
