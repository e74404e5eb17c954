package discover

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/probe"
)

// Admission of listed servers to the prober. A master decides which
// addresses a client probes; a broken or hostile one can list thousands
// of addresses that are no game servers (a victim's ports, which answer
// nothing or an ICMP error at once, so a window of probes in flight
// refills as fast as it empties). Whatever a master lists, the servers it
// listed are handed to the prober no faster than
//
//	AdmitBurst + AdmitRate × (time since the run began) + AdmitPerAnswer × (servers that answered)
//
// so listed addresses that never answer are probed at AdmitRate once the
// burst is spent, while a list of live servers, whose answers each admit
// two more, is not held back (as TCP's slow start grows with the acks).
// In [Discover], extra targets, given by the user, are not metered; in
// [Ordered], whose strategy hands out listed and extra targets alike,
// every target is.
const (
	// DefaultAdmitBurst is how many listed servers may be handed to the
	// prober before any has answered: a whole list of a mid-size game,
	// more than the prober's window at any default pace.
	DefaultAdmitBurst = 1000
	// DefaultAdmitRate is how many more listed servers per second may be
	// handed out whether or not any answers.
	DefaultAdmitRate = 100
	// AdmitPerAnswer is how many more listed servers each server that
	// answered admits.
	AdmitPerAnswer = 2
)

// meter is the admission rule above, for one run: how many listed
// servers went to the prober (metered) and how many answered, since
// start.
type meter struct {
	start    time.Time
	burst    int
	rate     float64 // negative: no metering
	metered  int
	answered int
}

func newMeter(cfg *Config, start time.Time) meter {
	burst, rate := cfg.admission()
	return meter{start: start, burst: burst, rate: rate}
}

// allows reports whether one more listed server may go to the prober at
// now.
func (m *meter) allows(now time.Time) bool {
	if m.rate < 0 {
		return true
	}
	return float64(m.metered+1) <= float64(m.burst)+m.rate*now.Sub(m.start).Seconds()+float64(AdmitPerAnswer*m.answered)
}

// wake returns when allows next turns true without an answer; zero when
// only an answer can make it.
func (m *meter) wake() time.Time {
	if m.rate <= 0 {
		return time.Time{}
	}
	need := float64(m.metered+1) - float64(m.burst) - float64(AdmitPerAnswer*m.answered)
	at := m.start.Add(max(time.Duration(need/m.rate*float64(time.Second)), 0))
	for !m.allows(at) { // rounding
		at = at.Add(time.Nanosecond)
	}
	return at
}

// listing is what is known of one address to probe.
type listing struct {
	masters []string      // that listed it, in order (none for an extra target)
	dialect probe.Dialect // of the first master that listed it
	extra   bool          // given in Config.Extra
}

// session is one discovery run's decisions: the pure core that [Discover]
// and [Ordered] drive. It does no I/O and never reads the clock: every
// method that depends on time takes now. It asks the masters (the
// methods in collect.go: poll, receive, wake), merges their lists, decides
// which servers go to the prober and when (due), and turns probe results
// into events (result). The shells write the queries it returns, feed it
// the packets and results, and emit the events it queues (takeEvents).
// It is used by one goroutine.
type session struct {
	cfg   Config
	start time.Time

	// Masters (collect.go).
	masters []*collecting
	byAddr  map[netip.AddrPort]*collecting
	stray   int
	sent    int
	out     int64
	in      int64

	// Merged lists: every address to probe, in the order first listed
	// (the prober's target index in Discover).
	seen  map[netip.AddrPort]*listing
	order []netip.AddrPort
	// Listed counts the distinct addresses the masters listed.
	listed int
	// refused counts the servers not probed by netscope.Refused, by
	// reason; refusedSeen holds them, so that one listed twice (under two
	// forms, by two masters) counts once.
	refused     map[string]int
	refusedSeen map[netip.AddrPort]struct{}

	// Probing (Discover only).
	handed      int        // order[:handed] went to the prober
	rng         *rand.Rand // due's draw for a paced prober; nil: the global source
	meter       meter      // admission of those listed by a master (not extra)
	results     int        // results taken
	firstResult time.Duration
	listsTook   time.Duration // when every list had ended, since start
	listsEnded  bool

	events []Event // not yet taken by the shell
}

// newSession returns the core of a run of cfg beginning at start, its
// masters deduplicated by address.
func newSession(cfg Config, start time.Time) *session {
	s := &session{cfg: cfg, start: start, byAddr: map[netip.AddrPort]*collecting{},
		seen: map[netip.AddrPort]*listing{}, refused: map[string]int{}, refusedSeen: map[netip.AddrPort]struct{}{}, meter: newMeter(&cfg, start)}
	for _, m := range cfg.Masters {
		m.Addr = netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
		if s.byAddr[m.Addr] != nil {
			continue
		}
		cm := &collecting{Master: m}
		cm.rep = MasterReport{Name: m.Name, Addr: m.Addr, Protocol: m.Protocol.String()}
		s.masters = append(s.masters, cm)
		s.byAddr[m.Addr] = cm
	}
	return s
}

// addExtra adds cfg.Extra to the servers to probe, after those listed so
// far; an address already known is not added twice.
func (s *session) addExtra() {
	for _, t := range s.cfg.Extra {
		ap := netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
		if s.seen[ap] == nil {
			s.seen[ap] = &listing{dialect: t.Dialect, extra: true}
			s.order = append(s.order, ap)
		}
	}
}

// list records that m listed ap (a usable address).
func (s *session) list(m *collecting, ap netip.AddrPort) {
	l := s.seen[ap]
	again := l != nil
	if !again {
		l = &listing{dialect: m.Dialect}
		s.seen[ap] = l
		s.order = append(s.order, ap)
		m.rep.New++
		s.listed++
	}
	if !slices.Contains(l.masters, m.Name) { // a master may list it under two forms
		l.masters = append(l.masters, m.Name)
	}
	s.events = append(s.events, Listed{Addr: ap, Master: m.Name, Again: again})
}

// due returns the servers to hand to the prober now: extra targets at
// once, listed ones as far as admission allows, in the order listed, or
// to a paced prober (Prober.Pace) drawn at random from those listed and
// not yet handed. A paced prober sends what it holds in random order,
// but admission hands it a few at a time once the burst is spent, and a
// master lists a hosting network's servers together, at one distance:
// handed in the list's order they would go out together, and their
// replies reach the player's link together (on discobench's 10 Mbit/s
// link, runs of 40-70 replies back to back, 3-6 ms of queueing, at the
// 99th percentile of the RTT error).
func (s *session) due(now time.Time) []probe.Target {
	var out []probe.Target
	for s.handed < len(s.order) {
		if s.cfg.Prober.Pace != nil {
			s.drawNext()
		}
		ap := s.order[s.handed]
		l := s.seen[ap]
		if !l.extra {
			if !s.meter.allows(now) {
				break
			}
			s.meter.metered++
		}
		s.handed++
		out = append(out, probe.Target{Addr: ap, Dialect: l.dialect})
	}
	return out
}

// drawNext puts one of the listed servers not yet handed, drawn at
// random, next in order; extra targets (at the front: they are handed at
// once) stay where they are.
func (s *session) drawNext() {
	n := len(s.order) - s.handed
	if n < 2 || s.seen[s.order[s.handed]].extra {
		return
	}
	var j int
	if s.rng != nil {
		j = s.rng.IntN(n)
	} else {
		j = rand.IntN(n)
	}
	j += s.handed
	if !s.seen[s.order[j]].extra {
		s.order[s.handed], s.order[j] = s.order[j], s.order[s.handed]
	}
}

// admitWake returns when admission next lets a listed server through;
// zero when none waits or only an answer can.
func (s *session) admitWake() time.Time {
	if s.handed == len(s.order) {
		return time.Time{}
	}
	return s.meter.wake()
}

// allHanded reports that every list has ended and every server went to
// the prober: the prober's input may be closed.
func (s *session) allHanded() bool { return s.listsDone() && s.handed == len(s.order) }

// result takes the prober's result for its target i (the i-th handed
// out) at now, and queues the event.
func (s *session) result(now time.Time, i int, r probe.Result) {
	s.results++
	sv := Server{Result: r}
	if i >= 0 && i < s.handed {
		if l := s.seen[s.order[i]]; l != nil {
			sv.Masters = append([]string(nil), l.masters...)
		}
	}
	if r.Answered() {
		s.meter.answered++
		if s.firstResult == 0 {
			s.firstResult = now.Sub(s.start)
		}
	}
	s.events = append(s.events, Probed{sv})
}

// takeEvents returns the events queued since the last call, in the order
// they happened.
func (s *session) takeEvents() []Event {
	ev := s.events
	s.events = nil
	return ev
}

// stop ends every list still open, at now, with err (the context's).
func (s *session) stop(now time.Time, err error) {
	for _, m := range s.masters {
		if m.pinging {
			s.pingsDone(now, m) // the list was complete; only pings are cut
			continue
		}
		s.finish(now, m, EndStopped, err)
	}
	s.endLists(now)
}

// endLists records when the lists ended, once.
func (s *session) endLists(now time.Time) {
	if !s.listsEnded {
		s.listsEnded = true
		s.listsTook = now.Sub(s.start)
	}
}

// summary returns the run's summary so far, the probe counts aside.
func (s *session) summary(now time.Time) Summary {
	sum := Summary{Listed: s.listed, MasterQueries: s.sent, MasterBytesOut: s.out, MasterBytesIn: s.in,
		Stray: s.stray, ListsTook: s.listsTook, FirstResult: s.firstResult, Took: now.Sub(s.start)}
	for _, m := range s.masters {
		sum.Masters = append(sum.Masters, m.rep)
	}
	for why, n := range s.refused {
		if sum.Refused == nil {
			sum.Refused = map[string]int{}
		}
		sum.Refused[why] = n
	}
	return sum
}

// String describes the session for test failures.
func (s *session) String() string {
	return fmt.Sprintf("session: %d masters, %d listed, %d handed (%d metered), %d results (%d answered)",
		len(s.masters), s.listed, s.handed, s.meter.metered, s.results, s.meter.answered)
}
