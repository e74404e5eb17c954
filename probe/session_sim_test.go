package probe

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// sessionSim is a discrete-event run of a whole paced session (the pure
// core: poll, wrote, receive) against a world like discobench's
// (world.Generate's): hosting networks at a base RTT drawn from
// [rttMin, rttMax] of 1-16 hosts, 1-4 servers a host on consecutive
// ports, every server within a millisecond of its network's RTT;
// every reply (Quake III infoResponse, size bytes on the wire) lost with
// probability loss, then crossing the client's access link (down bits/s,
// tail drop at queue bytes; 0: none) in the order it reaches it. An
// upstream of up bits/s (0: none, no queue limit) carries each request
// (51 bytes on the wire) first. Time is synthetic; the shell's wake-ups
// come up to wakeLate after they were due (a loaded host's timers), and a
// reply's arrival wakes it at once, as Run's loop does.
type sessionSim struct {
	n              int
	rttMin, rttMax time.Duration
	size           int
	loss           float64
	down           float64
	queue          int
	up             float64
	wakeLate       time.Duration
	seed           uint64
	// admitBurst and admitRate, when positive, hand the targets to the
	// session as package discover admits them (the burst, the rate a
	// second and two more for each server answered), in the list's order.
	admitBurst   int
	admitRate    float64
	admitShuffle bool   // in random order, not the list's
	prober       Prober // Pace{} unless a Pace, Interval or Window is set
}

type sessionSimResult struct {
	took      time.Duration   // first send to the last result
	rttErr    []time.Duration // reported minus true RTT, of the answered, sorted
	waits     []time.Duration // queueing on the downstream, sorted
	upWaits   []time.Duration // queueing on the upstream, sorted
	drops     int             // replies dropped by the link's queue
	lost      int             // replies lost to loss
	answered  int
	counts    Counts
	pacer     *Pacer
	lastSend  time.Duration // first send to the last send
	half, p99 time.Duration // first send to half and 99% of the results
}

func (r sessionSimResult) String() string {
	return fmt.Sprintf("took %v (half %v, 99%% %v, last send %v), %d/%d answered, probes %d, retries %d, RTT err p50 %v p99 %v max %v, queueing p99 %v, %d dropped, %d cuts, peak rate %.0f",
		r.took.Round(time.Millisecond), r.half.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.lastSend.Round(time.Millisecond),
		r.answered, r.counts.Targets, r.counts.Sent, r.counts.Retries,
		quantileOf(r.rttErr, 0.5), quantileOf(r.rttErr, 0.99), quantileOf(r.rttErr, 1), quantileOf(r.waits, 0.99), r.drops, r.counts.PaceCuts, r.counts.PacePeakRate)
}

// simServer is one server of the simulated world.
type simServer struct {
	addr netip.AddrPort
	rtt  time.Duration
}

// world draws the simulated world's servers, in a master's order
// (a hosting network's servers together).
func (s sessionSim) world(rng *rand.Rand) []simServer {
	var out []simServer
	host := 0
	for len(out) < s.n {
		base := s.rttMin + time.Duration(rng.Int64N(int64(s.rttMax-s.rttMin)+1))
		for range 1 + rng.IntN(16) {
			host++
			a := netip.AddrFrom4([4]byte{10, byte(host >> 16), byte(host >> 8), byte(host)})
			for k := range 1 + rng.IntN(4) {
				rtt := base + time.Duration(rng.Int64N(int64(2*time.Millisecond)+1)) - time.Millisecond
				rtt = min(max(rtt, s.rttMin), s.rttMax)
				if len(out) < s.n {
					out = append(out, simServer{netip.AddrPortFrom(a, uint16(27960+k)), rtt})
				}
			}
		}
	}
	return out
}

type simReply struct {
	at     time.Time
	to     *simServer
	tok    uint64
	atLink bool // reaching the access link; otherwise reaching the client
}

func (r simReply) when() time.Time { return r.at }

func (s sessionSim) run() sessionSimResult {
	rng := rand.New(rand.NewPCG(s.seed, 2))
	servers := s.world(rng)
	byAddr := make(map[netip.AddrPort]*simServer, len(servers))
	p := s.prober
	if p.Pace == nil && p.Interval == 0 && p.Window == 0 {
		p.Pace = &Pace{}
	}
	ses := newSession(p.settings())
	ses.rng = rand.New(rand.NewPCG(s.seed, 3))
	for i := range servers {
		byAddr[servers[i].addr] = &servers[i]
	}
	pad := strings.Repeat("x", max(s.size-UDPOverhead-len("\xff\xff\xff\xffinfoResponse\n\\challenge\\\\hostname\\")-Q3ChallengeLen, 1))

	t0 := time.Unix(1000, 0)
	now := t0
	var ev timeHeap[simReply]
	down := simLink{rate: s.down, size: s.size, queue: s.queue}
	up := simLink{rate: s.up, size: 51, queue: -1}
	var res sessionSimResult
	var first, lastSend time.Time
	var doneAt []time.Time
	added := 0
	order := make([]int, len(servers)) // the order targets are admitted in
	for i := range order {
		order[i] = i
	}
	// admit adds the targets the admission allows at now, in the list's
	// order (all of them without admission).
	admit := func(now time.Time) {
		for added < len(servers) {
			if s.admitBurst > 0 && float64(added+1) > float64(s.admitBurst)+s.admitRate*now.Sub(t0).Seconds()+2*float64(res.answered) {
				return
			}
			if s.admitShuffle {
				j := added + rng.IntN(len(servers)-added)
				order[added], order[j] = order[j], order[added]
			}
			ses.add(Target{servers[order[added]].addr, Q3Info})
			added++
		}
		ses.closeInput()
	}
	admit(now)
	for !ses.done() {
		admit(now)
		for _, sd := range ses.poll(now) {
			if first.IsZero() {
				first = now
			}
			lastSend = now
			srv := byAddr[sd.r.t.addr]
			tok := sd.tok
			ses.wrote(sd, now, nil)
			at := now
			if s.up > 0 {
				at, _ = up.pass(now)
			}
			if rng.Float64() < s.loss {
				res.lost++
				continue
			}
			heap.Push(&ev, simReply{at: at.Add(srv.rtt), to: srv, tok: tok, atLink: true})
		}
		for _, t := range ses.takeFinished() {
			doneAt = append(doneAt, now)
			if t.res.Answered() {
				res.answered++
				res.rttErr = append(res.rttErr, t.res.RTT-byAddr[t.addr].rtt)
			}
		}
		if ses.done() {
			break
		}
		next := ses.wake()
		if !next.IsZero() && s.wakeLate > 0 {
			next = next.Add(time.Duration(rng.Int64N(int64(s.wakeLate))))
		}
		if added < len(servers) && s.admitRate > 0 {
			// the next target the rate alone admits
			at := t0.Add(time.Duration((float64(added+1) - float64(s.admitBurst) - 2*float64(res.answered)) / s.admitRate * float64(time.Second)))
			if !at.After(now) {
				at = now.Add(time.Microsecond)
			}
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if len(ev) > 0 && (next.IsZero() || !next.Before(ev[0].at)) {
			e := heap.Pop(&ev).(simReply)
			now = e.at
			switch {
			case !e.atLink:
				b := fmt.Appendf(nil, "\xff\xff\xff\xffinfoResponse\n\\challenge\\%s\\hostname\\%s", q3Challenge(e.tok), pad)
				ses.receive(now, e.to.addr, b)
			case s.down == 0:
				e.atLink = false
				heap.Push(&ev, e)
			default:
				out, ok := down.pass(e.at)
				if !ok {
					continue
				}
				e.at, e.atLink = out, false
				heap.Push(&ev, e)
			}
			continue
		}
		if next.IsZero() {
			panic("sim: nothing scheduled and the session is not done")
		}
		if next.After(now) {
			now = next
		}
	}
	for _, t := range ses.takeFinished() {
		doneAt = append(doneAt, now)
		if t.res.Answered() {
			res.answered++
			res.rttErr = append(res.rttErr, t.res.RTT-byAddr[t.addr].rtt)
		}
	}
	res.took = now.Sub(first)
	res.lastSend = lastSend.Sub(first)
	res.counts = ses.counts
	res.pacer = ses.pacer
	slices.SortFunc(doneAt, func(a, b time.Time) int { return a.Compare(b) })
	res.half = doneAt[len(doneAt)/2].Sub(first)
	res.p99 = doneAt[len(doneAt)*99/100].Sub(first)
	slices.Sort(res.rttErr)
	res.waits, res.drops, res.upWaits = down.waits, down.drops, up.waits
	slices.Sort(res.waits)
	slices.Sort(res.upWaits)
	return res
}

// linkBound is the least time a run could take on s's access link: the
// wire bytes of the replies it got over the link's rate, plus the
// largest RTT (discobench's transfer bound).
func (s sessionSim) linkBound(r sessionSimResult) time.Duration {
	return time.Duration(float64(r.counts.Received*s.size)*8/s.down*float64(time.Second)) + s.rttMax
}

// runSims runs s for seeds 0..n-1 and returns the results and the median
// of took over the link's bound.
func runSims(t *testing.T, s sessionSim, n int) ([]sessionSimResult, float64) {
	t.Helper()
	var out []sessionSimResult
	var ratios []float64
	for seed := range uint64(n) {
		s.seed = seed
		r := s.run()
		ratio := r.took.Seconds() / s.linkBound(r).Seconds()
		t.Logf("seed %d: %.2fx the bound of %v: %v", seed, ratio, s.linkBound(r).Round(time.Millisecond), r)
		out = append(out, r)
		ratios = append(ratios, ratio)
	}
	slices.Sort(ratios)
	return out, ratios[len(ratios)/2]
}

// TestSession_AccessLink: a whole paced run (the session's order and
// retries with the pacer) of discobench's world: 5,000 servers on hosts
// of 1-4 at 10-400 ms, 1% of replies lost, a 10 Mbit/s access link with a
// 250 ms queue, the servers handed over as package discover admits them
// (a burst of 1,000, then two for each answer, drawn at random among
// those listed). Over 5 seeds the median run ends within 1.4 times the
// link's transfer bound (1.33x here, 1.11-1.39x), every server answers,
// nothing is dropped and the RTT error (the queueing on the link and a
// reply's transmission) stays under 2 ms at the 99th percentile (1.0-1.4
// ms). Before this order, the utilisation of pace_budget.go and the
// random admission the median was 1.74x (1.47-1.83x).
func TestSession_AccessLink(t *testing.T) {
	s := sessionSim{n: 5000, rttMin: 10 * time.Millisecond, rttMax: 400 * time.Millisecond, size: 220,
		loss: 0.01, down: 10e6, queue: 312500, wakeLate: 200 * time.Microsecond,
		admitBurst: 1000, admitRate: 100, admitShuffle: true}
	rs, ratio := runSims(t, s, 5)
	if ratio > 1.4 {
		t.Errorf("median run %.2fx the link's bound, want at most 1.4x", ratio)
	}
	for i, r := range rs {
		if p99 := quantileOf(r.rttErr, 0.99); r.answered != s.n || r.drops > 0 || p99 >= 2*time.Millisecond {
			t.Errorf("seed %d: %d of %d answered, %d dropped by the link, RTT error p99 %v", i, r.answered, s.n, r.drops, p99)
		}
	}
}

// TestSession_SlowAccessLink: 2,000 servers as above behind a 1 Mbit/s
// link (a reply crosses in 1.76 ms): over 3 seeds the median run ends
// within 1.52 times the bound (1.47x here; 1.56x before, 1.54-1.61x),
// nothing is dropped, and the median RTT error p99 stays under 20 ms
// (10.1 ms here, 9.9-14.4, about 6 replies' transmission; 13.4 ms
// before, 9.0-14.0).
func TestSession_SlowAccessLink(t *testing.T) {
	s := sessionSim{n: 2000, rttMin: 10 * time.Millisecond, rttMax: 400 * time.Millisecond, size: 220,
		loss: 0.01, down: 1e6, queue: 31250, wakeLate: 200 * time.Microsecond,
		admitBurst: 1000, admitRate: 100, admitShuffle: true}
	rs, ratio := runSims(t, s, 3)
	var errs []time.Duration
	for i, r := range rs {
		errs = append(errs, quantileOf(r.rttErr, 0.99))
		if r.answered != s.n || r.drops > 0 {
			t.Errorf("seed %d: %d of %d answered, %d dropped by the link", i, r.answered, s.n, r.drops)
		}
	}
	slices.Sort(errs)
	if ratio > 1.52 || errs[1] > 20*time.Millisecond {
		t.Errorf("median run %.2fx the link's bound, median RTT error p99 %v; want at most 1.52x and 20 ms", ratio, errs[1])
	}
}
