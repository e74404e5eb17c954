package probe

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// loopbackFleet starts n Q3 responders on 127.0.0.1 that answer getinfo
// at once with a minimal infoResponse echoing the challenge.
func loopbackFleet(tb testing.TB, n int) []Target {
	tb.Helper()
	var out []Target
	for range n {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			tb.Fatal(err)
		}
		done := make(chan struct{})
		tb.Cleanup(func() { c.Close(); <-done })
		go func() {
			defer close(done)
			buf := make([]byte, 512)
			for {
				n, from, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				_, chal, ok := bytes.Cut(buf[:n], []byte("getinfo "))
				if !ok {
					continue
				}
				reply := append([]byte("\xff\xff\xff\xffinfoResponse\n\\hostname\\bench\\mapname\\q3dm17\\clients\\0\\sv_maxclients\\8\\challenge\\"), chal...)
				c.WriteToUDPAddrPort(reply, from)
			}
		}()
		out = append(out, Target{c.LocalAddr().(*net.UDPAddr).AddrPort(), Q3Info})
	}
	return out
}

// BenchmarkEngine_Loopback measures the engine's ceiling: probes per
// second through one socket against loopback responders that answer at
// once, window wide open, no pacing. Each round probes every responder
// once (a run may not list an address twice).
func BenchmarkEngine_Loopback(b *testing.B) {
	benchEngine(b, &Prober{Window: 256, Timeout: time.Second, Attempts: 2})
}

// BenchmarkEngine_Paced1000 probes at 1,000 a second, the rate the timing
// accuracy is judged at: the stamp lag is then what the kernel's
// timestamp takes off each RTT at that rate.
func BenchmarkEngine_Paced1000(b *testing.B) {
	benchEngine(b, &Prober{Window: 1000, Interval: IntervalForRate(1000), Timeout: time.Second, Attempts: 2})
}

func benchEngine(b *testing.B, p *Prober) {
	const fleet = 512
	targets := loopbackFleet(b, fleet)
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.SetReadBuffer(4 << 20)
	conn, stamped := KernelTimestamps(c)
	var total Counts
	var rtt time.Duration
	answered := 0
	b.ResetTimer()
	for done := 0; done < b.N; done += fleet {
		round := targets[:min(fleet, b.N-done)]
		counts, err := p.Run(b.Context(), conn, round, func(_ int, r Result) {
			if r.Answered() {
				answered++
				rtt += r.RTT
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		total.Sent += counts.Sent
		total.KernelStamped += counts.KernelStamped
		total.StampLag += counts.StampLag
		total.StampLagMax = max(total.StampLagMax, counts.StampLagMax)
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Sent)/b.Elapsed().Seconds(), "probes/s")
	if answered > 0 {
		b.ReportMetric(float64(rtt.Microseconds())/float64(answered), "rtt-µs")
	}
	if stamped && total.KernelStamped > 0 {
		b.ReportMetric(float64(total.StampLag.Microseconds())/float64(total.KernelStamped), "stamp-lag-µs")
		b.ReportMetric(float64(total.StampLagMax.Microseconds()), "stamp-lag-max-µs")
	}
	if answered < b.N*99/100 {
		b.Errorf("%d of %d answered", answered, b.N)
	}
}

// TestKernelTimestamps_OverLoopback checks that a reply read through
// KernelTimestamps is stamped by the kernel on Linux, and its lag is sane.
func TestKernelTimestamps_OverLoopback(t *testing.T) {
	targets := loopbackFleet(t, 4)
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, stamped := KernelTimestamps(c)
	if !stamped {
		t.Skip("no kernel receive timestamps on this platform")
	}
	counts, err := (&Prober{}).Run(t.Context(), conn, targets, func(_ int, r Result) {
		if !r.Answered() {
			t.Errorf("%v: %v", r.Addr, r.Err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if counts.KernelStamped != 4 || counts.StampLagMax > maxStampLag || counts.StampLag < 0 {
		t.Fatalf("counts %+v; want 4 replies stamped by the kernel", counts)
	}
}

// BenchmarkEngine_DeadServers probes a list where half the servers are
// gone (closed ports on loopback), interleaved with live ones, with the
// default window of 16, a 200 ms timeout and 2 attempts: "icmp" reads the
// socket through Wrap (Linux: a closed port ends at its ICMP error),
// "plain" through KernelTimestamps (a closed port holds its slot for
// both timeouts). One op is one run of the whole list; the unreachable
// and silent metrics say how the dead servers ended (the kernel's ICMP
// rate limit, net.ipv4.icmp_msgs_per_sec and _burst, can leave some
// without an ICMP error).
func BenchmarkEngine_DeadServers(b *testing.B) {
	const half = 64
	live := loopbackFleet(b, half)
	var targets []Target
	for i := range half {
		dead := closedPort(b, net.IPv4(127, 0, 3, byte(i+1)))
		targets = append(targets, live[i], Target{dead, Q3Info})
	}
	for _, mode := range []string{"icmp", "plain"} {
		b.Run(mode, func(b *testing.B) {
			c, err := net.ListenUDP("udp", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			conn, _ := KernelTimestamps(c)
			if mode == "icmp" {
				var f Features
				if conn, f = Wrap(c); !f.ICMPErrors {
					b.Skip("no ICMP errors on this platform")
				}
			}
			p := &Prober{Timeout: 200 * time.Millisecond, Attempts: 2}
			var total Counts
			for b.Loop() {
				counts, err := p.Run(b.Context(), conn, targets, func(int, Result) {})
				if err != nil {
					b.Fatal(err)
				}
				total.Answered += counts.Answered
				total.Unreachable += counts.Unreachable
				total.Silent += counts.Silent
			}
			b.ReportMetric(float64(total.Answered)/float64(b.N), "answered")
			b.ReportMetric(float64(total.Unreachable)/float64(b.N), "unreachable")
			b.ReportMetric(float64(total.Silent)/float64(b.N), "silent")
		})
	}
}
