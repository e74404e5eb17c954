package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
)

// Pacing is how a client sends probes.
type Pacing struct {
	// Interval is the time between two probes sent back to back.
	Interval time.Duration
	// Window is the most probes outstanding at once; 0 is unlimited.
	Window int
	// Timeout is how long an unanswered probe is waited for.
	Timeout time.Duration
	// Loss is the probability that a server does not answer at all (gone
	// since it registered, or filtered), in [0, 1]. It is drawn once per
	// server from the run's seed, so every strategy of a row meets the same
	// silent servers, and a silent server is not counted as playable.
	Loss float64
}

// Game pacings: the full-probe durations of the paper's figures 2 and 3.
const (
	FullProbeET  = 70 * time.Second
	FullProbeCSS = 200 * time.Second
	// WindowET is the outstanding-probe limit of ET's client.
	WindowET = 16
	// DefaultTimeout and DefaultLoss are assumptions (see EVALUATION.md).
	DefaultTimeout = time.Second
	DefaultLoss    = 0.01
)

// PacingFor returns the pacing of the game's real client for a world of n
// servers.
func PacingFor(g population.Game, n int) Pacing {
	p := Pacing{Interval: FullProbeET / time.Duration(max(n, 1)), Window: WindowET, Timeout: DefaultTimeout, Loss: DefaultLoss}
	if g == population.CSS {
		p.Interval, p.Window = FullProbeCSS/time.Duration(max(n, 1)), 0
	}
	return p
}

// Probe is one probe of a run: the per-probe trace.
type Probe struct {
	Index    int            // the server's position in the master's list
	Phase    adaptive.Phase // Calibrate, Split, Reordered or Master
	Sent     time.Duration  // since the start of discovery
	Done     time.Duration  // when the reply arrived or the probe timed out
	RTT      time.Duration  // measured; meaningful when Answered
	Answered bool
	// Bottom is the running RTTbottom after this probe's outcome: the
	// nearest-rank 2nd percentile of the last 100 outcomes of its phase
	// (step 6 for adaptive, all probes for conventional), lost probes
	// counting as infinite; 0 until 100 outcomes, adaptive.NoAnswer when it
	// falls on lost probes. Probes are in the order their outcomes arrived.
	Bottom time.Duration
}

// Input is what one run needs.
type Input struct {
	Targets []adaptive.Target // the master's list
	RTTs    []time.Duration   // base RTT to each target, same order
	Pacing  Pacing
	Seed    uint64 // jitter and loss
	// Playable is the largest playable RTT (200 ms): it defines which
	// servers count as playable (by base RTT) in the result.
	Playable time.Duration
}

// Result is the outcome of one run.
type Result struct {
	Sent, Answered, Lost int
	// Calibrate, Split, Reordered and Master count the probes sent in each
	// phase. Initial probes (Table 2) are Calibrate + Split.
	Calibrate, Split, Reordered, Master int
	// Stopped reports that the strategy stopped (auto-stop, or the oracle
	// after its last playable server) at StopTime, after StopSent probes.
	Stopped  bool
	StopTime time.Duration
	StopSent int
	StopInfo adaptive.StopInfo
	// End is when the last outcome arrived: the full probe's duration for
	// a strategy that does not stop.
	End time.Duration
	// Playable is the number of servers whose base RTT is below Playable;
	// Found is how many of them answered by StopTime (End if not stopped),
	// and LastPlayable when the last of those answers arrived.
	Playable, Found int
	LastPlayable    time.Duration
	Clusters        []adaptive.ClusterInfo
	Trace           []Probe
}

// ErrInput is wrapped by Run's error for inputs it refuses.
var ErrInput = errors.New("sim: invalid input")

const bottomWindow = 100

// Run simulates discovery of in.Targets with strategy s, which must have
// been made from the same targets.
func Run(s adaptive.Strategy, in Input) (*Result, error) {
	if len(in.RTTs) != len(in.Targets) {
		return nil, fmt.Errorf("%w: %d targets, %d RTTs", ErrInput, len(in.Targets), len(in.RTTs))
	}
	if in.Pacing.Interval < 0 || in.Pacing.Window < 0 || in.Pacing.Timeout <= 0 || !(in.Pacing.Loss >= 0 && in.Pacing.Loss <= 1) {
		return nil, fmt.Errorf("%w: pacing %+v", ErrInput, in.Pacing)
	}
	rng := rand.New(rand.NewPCG(in.Seed, 0x51a))
	r := &Result{}
	for i, d := range in.RTTs {
		if d < in.Playable && !silent(in.Seed, i, in.Pacing.Loss) {
			r.Playable++
		}
	}
	var (
		q            Queue
		now          time.Duration
		nextSend     time.Duration
		outstanding  int
		tickPending  = true
		doneSending  bool
		last         = map[adaptive.Phase][]time.Duration{}
		playableSeen = make([]bool, len(in.Targets))
		order        []int // trace indices in the order outcomes arrived
	)
	q.Push(Event{At: 0, Kind: Send})
	for {
		e, ok := q.Pop()
		if !ok {
			break
		}
		now = e.At
		switch e.Kind {
		case Send:
			tickPending = false
			if r.Stopped || doneSending || in.Pacing.Window > 0 && outstanding >= in.Pacing.Window {
				break
			}
			t, ph, ok := s.Next()
			if !ok {
				if ph == adaptive.Done {
					doneSending = true
					// A strategy told of servers it will not probe (a
					// group skipped) can stop while handing out.
					if st, info := s.Stopped(); st && !r.Stopped {
						r.Stopped, r.StopTime, r.StopSent, r.StopInfo = true, now, r.Sent, info
					}
				}
				break // waiting: the next outcome resumes sending
			}
			if t.Index < 0 || t.Index >= len(in.Targets) {
				return nil, fmt.Errorf("%w: strategy handed out index %d", ErrInput, t.Index)
			}
			p := Probe{Index: t.Index, Phase: ph, Sent: now}
			base := in.RTTs[t.Index]
			jit := population.Jitter(rng, base)
			lost := silent(in.Seed, t.Index, in.Pacing.Loss)
			r.Sent++
			switch ph {
			case adaptive.Calibrate:
				r.Calibrate++
			case adaptive.Split:
				r.Split++
			case adaptive.Reordered:
				r.Reordered++
			case adaptive.Master:
				r.Master++
			}
			id := len(r.Trace)
			if lost {
				p.Done = now + in.Pacing.Timeout
				r.Trace = append(r.Trace, p)
				q.Push(Event{At: p.Done, Kind: Timeout, Probe: id})
			} else {
				p.RTT, p.Answered = base+jit, true
				p.Done = now + p.RTT
				r.Trace = append(r.Trace, p)
				q.Push(Event{At: p.Done, Kind: Reply, Probe: id})
			}
			outstanding++
			nextSend = now + in.Pacing.Interval
			q.Push(Event{At: nextSend, Kind: Send})
			tickPending = true
		case Reply, Timeout:
			outstanding--
			order = append(order, e.Probe)
			p := &r.Trace[e.Probe]
			if p.Answered {
				r.Answered++
			} else {
				r.Lost++
			}
			r.End = now
			if err := s.Observe(in.Targets[p.Index].Addr, p.RTT, p.Answered); err != nil {
				return nil, fmt.Errorf("sim: observe: %w", err)
			}
			v := p.RTT
			if !p.Answered {
				v = adaptive.NoAnswer
			}
			w := append(last[p.Phase], v)
			if len(w) > bottomWindow {
				w = w[1:]
			}
			last[p.Phase] = w
			if len(w) == bottomWindow {
				p.Bottom = nearestRank(w, 0.02)
			}
			if !r.Stopped && p.Answered && in.RTTs[p.Index] < in.Playable && !playableSeen[p.Index] {
				playableSeen[p.Index] = true
				r.Found++
				r.LastPlayable = now
			}
			if !r.Stopped {
				if st, info := s.Stopped(); st {
					r.Stopped, r.StopTime, r.StopSent, r.StopInfo = true, now, r.Sent, info
				}
			}
			if !tickPending && !r.Stopped && !doneSending {
				q.Push(Event{At: max(now, nextSend), Kind: Send})
				tickPending = true
			}
		}
	}
	// Trace in the order outcomes arrived.
	tr := make([]Probe, 0, len(order))
	for _, i := range order {
		tr = append(tr, r.Trace[i])
	}
	r.Trace = tr
	r.Clusters = s.Clusters()
	return r, nil
}

func nearestRank(w []time.Duration, p float64) time.Duration {
	c := slices.Clone(w)
	slices.Sort(c)
	k := int(math.Ceil(p*float64(len(c)))) - 1
	return c[max(k, 0)]
}

// silent reports whether server i never answers in a run of this seed.
func silent(seed uint64, i int, loss float64) bool {
	z := seed ^ uint64(i)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11)/(1<<53) < loss
}
