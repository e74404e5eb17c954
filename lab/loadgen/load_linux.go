//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Query load defaults.
const (
	// DefaultSources is how many source sockets send requests.
	DefaultSources = 256
	// DefaultOutstanding is the closed loop's requests in flight.
	DefaultOutstanding = 8
	// DefaultDuration bounds one run.
	DefaultDuration = 10 * time.Second
	// DefaultAnswerTimeout is how long a request may wait for its EOT.
	DefaultAnswerTimeout = time.Second
	// DefaultCheckEvery: every Nth answer (and the first) is decoded with
	// q3.Parse and compared with the fleet, entry by entry.
	DefaultCheckEvery = 1000
	// DefaultRecvBuffer is each source socket's receive buffer: room for a
	// few full answers (a 5,000-server answer is about 36 KB of payload).
	DefaultRecvBuffer = 1 << 20
	// DefaultEndGrace is how long an answer that has had an end marker
	// but not every server stays open for more packets: q3.EndGrace, the
	// rule for masters that end every packet with the marker (package
	// discover's too).
	DefaultEndGrace = q3.EndGrace
)

// DefaultSourceBase is the first source address.
var DefaultSourceBase = netip.AddrFrom4([4]byte{127, 64, 0, 1})

// Config describes one query run. Zero fields take the defaults above.
type Config struct {
	Master netip.AddrPort // the master; required
	Query  []byte         // the request; required
	Expect int            // servers in a complete answer; required

	Sources    int        // source sockets, one per address; default DefaultSources
	SourceBase netip.Addr // first source address; default DefaultSourceBase
	// SourceNets, above 1, spreads the sources over that many /16s from
	// SourceBase's (SpreadLayout): clients from many networks rather than
	// one.
	SourceNets  int
	Outstanding int // closed loop: requests in flight (at most Sources); default DefaultOutstanding
	// Rate, when positive, makes the run open-loop: requests per second,
	// round-robin over the sources whatever is in flight.
	Rate        float64
	Duration    time.Duration // how long requests are sent; default DefaultDuration
	MaxRequests int           // stop sending after this many; 0 means no bound but Duration
	Timeout     time.Duration // per answer; default DefaultAnswerTimeout
	CheckEvery  int           // default DefaultCheckEvery; negative: never
	Want        []netip.AddrPort
	RecvBuffer  int // bytes; default DefaultRecvBuffer
	// PID is the master's process, whose CPU time is read before and
	// after; 0 skips it.
	PID int
	// FirstMarkerEnds ends each answer at its first end marker, which
	// reads only dpmaster 2.x's layout (the marker on the last packet)
	// and is the old rule. By default an answer ends either at the packet
	// with a marker that brings it to Expect servers (complete at once,
	// whatever the layout), or EndGrace after the last packet, if that
	// came after a marker (servers missing): this reads both layouts, the
	// marker on every packet (scout master's default, id's master) and on
	// the last only.
	FirstMarkerEnds bool
	// EndGrace is the silence after a marker that ends an answer still
	// short of Expect servers; default DefaultEndGrace.
	EndGrace time.Duration
}

func (c *Config) setDefaults() {
	if c.Sources == 0 {
		c.Sources = DefaultSources
	}
	if !c.SourceBase.IsValid() {
		c.SourceBase = DefaultSourceBase
	}
	if c.Outstanding == 0 {
		c.Outstanding = DefaultOutstanding
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultAnswerTimeout
	}
	if c.CheckEvery == 0 {
		c.CheckEvery = DefaultCheckEvery
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = DefaultRecvBuffer
	}
	if c.EndGrace == 0 {
		c.EndGrace = DefaultEndGrace
	}
}

// Result is what one run measured.
type Result struct {
	Elapsed    time.Duration `json:"elapsed_ns"`  // first request to last answer or give-up
	Requests   int           `json:"requests"`    // requests sent
	SendErrors int           `json:"send_errors"` // requests the kernel refused to send
	Complete   int           `json:"complete"`    // answers with EOT and every server
	Incomplete int           `json:"incomplete"`  // answers with EOT but servers missing (or too many)
	Unanswered int           `json:"unanswered"`  // no EOT within Timeout
	Silent     int           `json:"silent"`      // of those, no reply packet at all (refused, or lost whole)
	Packets    uint64        `json:"packets"`     // reply datagrams received
	Bytes      uint64        `json:"bytes"`       // their UDP payload bytes
	Stray      uint64        `json:"stray"`       // datagrams that were not a list from the master, or after the last request's answer
	Malformed  uint64        `json:"malformed"`   // list datagrams that did not decode
	// PacketsPerAnswer and BytesPerAnswer are those of a complete answer.
	PacketsPerAnswer int `json:"packets_per_answer"`
	BytesPerAnswer   int `json:"bytes_per_answer"`
	// LostPackets is, over every answer that began arriving but was not
	// complete, the packets of a complete answer it lacked; MissingEntries
	// the servers it lacked. Silent requests are not in them.
	LostPackets    int `json:"lost_packets"`
	MissingEntries int `json:"missing_entries"`
	// Checked answers were decoded in full and compared with Want;
	// CheckFailed of them did not hold exactly the fleet.
	Checked     int `json:"checked"`
	CheckFailed int `json:"check_failed"`
	// Latency from request to EOT, over complete answers.
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	// MasterCPU is the master's CPU time (user + system) over the run,
	// to 10 ms; LoadCPU this process's.
	MasterCPU time.Duration `json:"master_cpu_ns"`
	LoadCPU   time.Duration `json:"load_cpu_ns"`
}

// AnswersPerSecond is complete answers per second of the run.
func (r Result) AnswersPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Complete) / r.Elapsed.Seconds()
}

// CPUPerAnswer is the master's CPU time per complete answer.
func (r Result) CPUPerAnswer() time.Duration {
	if r.Complete == 0 {
		return 0
	}
	return r.MasterCPU / time.Duration(r.Complete)
}

// source is one source socket's requests in flight (send times, oldest
// first) and the answer being received for the oldest.
type source struct {
	sent    []time.Time
	packets int
	bytes   int
	entries int
	ended   bool             // an end marker came (the grace rule: done EndGrace after last)
	last    time.Time        // arrival of the answer's latest packet
	check   bool             // decode this answer in full
	list    []netip.AddrPort // its servers, when check
}

func (s *source) reset() {
	s.packets, s.bytes, s.entries, s.ended, s.check, s.list = 0, 0, 0, false, false, s.list[:0]
}

// Run sends requests to the master and receives the answers for
// cfg.Duration (or cfg.MaxRequests), then waits up to cfg.Timeout for the
// answers still in flight. It stops early, with what it measured, when ctx
// ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.setDefaults()
	var res Result
	switch {
	case !cfg.Master.IsValid() || len(cfg.Query) == 0 || cfg.Expect < 0:
		return res, errors.New("loadgen: master, query and expected list size are required")
	case cfg.Rate <= 0 && (cfg.Outstanding < 1 || cfg.Outstanding > cfg.Sources):
		return res, fmt.Errorf("loadgen: %d outstanding requests over %d sources", cfg.Outstanding, cfg.Sources)
	case cfg.Duration < 0 || cfg.Timeout < 0 || cfg.MaxRequests < 0 || cfg.EndGrace < 0:
		return res, errors.New("loadgen: negative duration, timeout, grace or request bound")
	}
	addrs, err := SpreadLayout(cfg.SourceBase, cfg.Sources, cfg.SourceNets)
	if err != nil {
		return res, err
	}
	if _, err := raiseOpenFiles(uint64(cfg.Sources) + 1024); err != nil {
		return res, fmt.Errorf("loadgen: open-file limit: %w", err)
	}
	set, err := openUDPSet(addrs, cfg.RecvBuffer)
	if err != nil {
		return res, err
	}
	defer set.close()

	var want map[netip.AddrPort]bool
	if len(cfg.Want) > 0 && cfg.CheckEvery > 0 {
		want = make(map[netip.AddrPort]bool, len(cfg.Want))
		for _, a := range cfg.Want {
			want[a] = true
		}
	}
	srcs := make([]source, cfg.Sources)
	events := make([]unix.EpollEvent, 256)
	var ready []int
	b := newBatch(32, 2048)
	var latencies []time.Duration
	var shortfalls []int // packets received by each answer that was not complete
	inflight, next, answers := 0, 0, 0

	cpu0, _ := SelfCPU()
	var mcpu0 time.Duration
	if cfg.PID > 0 {
		if mcpu0, err = ProcCPU(cfg.PID); err != nil {
			return res, fmt.Errorf("loadgen: master process: %w", err)
		}
	}
	start := time.Now()
	stopSending := start.Add(cfg.Duration)
	sending := func(now time.Time) bool {
		return now.Before(stopSending) && (cfg.MaxRequests == 0 || res.Requests < cfg.MaxRequests) && ctx.Err() == nil
	}
	send := func(i int, now time.Time) {
		if err := set.send(i, cfg.Query, cfg.Master); err != nil {
			res.SendErrors++
			return
		}
		res.Requests++
		inflight++
		srcs[i].sent = append(srcs[i].sent, now)
	}
	// sendIdle sends from the next source with nothing in flight (closed
	// loop: one request per source, so answers never interleave).
	sendIdle := func(now time.Time) {
		for range srcs {
			i := next
			next = (next + 1) % len(srcs)
			if len(srcs[i].sent) == 0 {
				send(i, now)
				return
			}
		}
	}
	finish := func(s *source, now time.Time, eot bool) {
		sentAt := s.sent[0]
		s.sent = s.sent[1:]
		inflight--
		switch {
		case eot && s.entries == cfg.Expect:
			res.Complete++
			latencies = append(latencies, now.Sub(sentAt))
			if res.PacketsPerAnswer == 0 {
				res.PacketsPerAnswer, res.BytesPerAnswer = s.packets, s.bytes
			}
		case eot:
			res.Incomplete++
			res.MissingEntries += max(0, cfg.Expect-s.entries)
			shortfalls = append(shortfalls, s.packets)
		case s.packets > 0:
			// Began arriving, never ended: the EOT packet or more was lost.
			res.Unanswered++
			res.MissingEntries += max(0, cfg.Expect-s.entries)
			shortfalls = append(shortfalls, s.packets)
		default:
			// Nothing came back: refused (flood protection, byte budget)
			// or lost whole; counted apart from lost packets.
			res.Unanswered++
			res.Silent++
		}
		if s.check {
			res.Checked++
			if !sameSet(s.list, want) {
				res.CheckFailed++
			}
		}
		s.reset()
		if cfg.Rate <= 0 && sending(now) {
			sendIdle(now)
		}
	}

	if cfg.Rate <= 0 {
		for k := 0; k < cfg.Outstanding && sending(start); k++ {
			sendIdle(start)
		}
	}
	lastExpiry := start
	for {
		now := time.Now()
		if cfg.Rate > 0 && sending(now) {
			due := int(now.Sub(start).Seconds()*cfg.Rate) + 1
			for res.Requests+res.SendErrors < due && sending(now) {
				send(next, now)
				next = (next + 1) % len(srcs)
			}
		}
		if !sending(now) && inflight == 0 {
			break
		}
		msec := 10
		if cfg.Rate > 0 {
			msec = 1
		}
		if ready, err = set.wait(events, ready, msec); err != nil {
			return res, err
		}
		for _, i := range ready {
			s := &srcs[i]
			for {
				n, err := set.recv(i, b)
				if err != nil {
					return res, err
				}
				if n == 0 {
					break
				}
				now := time.Now()
				for k := range n {
					p, from := b.datagram(k)
					if from != cfg.Master || len(s.sent) == 0 {
						res.Stray++
						continue
					}
					entries, eot, err := countEntries(p)
					if errors.Is(err, errNotList) {
						res.Stray++
						continue
					}
					// The grace rule, with the next request's answer
					// already due: a packet that would take an ended
					// answer past Expect servers starts the next one.
					if s.ended && len(s.sent) > 1 && s.entries+entries > cfg.Expect {
						finish(s, now, true)
					}
					res.Packets++
					res.Bytes += uint64(len(p))
					if s.packets == 0 {
						answers++
						s.check = want != nil && (answers == 1 || answers%cfg.CheckEvery == 0)
					}
					s.packets++
					s.bytes += len(p)
					s.entries += entries
					if err != nil {
						res.Malformed++
					}
					if s.check {
						if m, _ := q3.Parse(p); m != nil {
							if r, ok := m.(q3.ServersResponse); ok {
								s.list = append(s.list, r.Servers...)
							}
						}
					}
					s.last = now
					s.ended = s.ended || eot
					// See Config.FirstMarkerEnds: an answer short of
					// servers is otherwise ended by the grace rule below.
					if eot && (cfg.FirstMarkerEnds || s.entries == cfg.Expect) {
						finish(s, now, true)
					}
				}
			}
		}
		// Give-ups use the time taken before this pass's wait: every answer
		// that had arrived by then has just been read, so a stalled load
		// generator does not take its own delay for a lost answer.
		if now.Sub(lastExpiry) >= 10*time.Millisecond {
			lastExpiry = now
			for i := range srcs {
				s := &srcs[i]
				// An answer already arriving gets twice the time, so a
				// give-up does not cut it in two.
				for len(s.sent) > 0 && (s.packets == 0 && now.Sub(s.sent[0]) > cfg.Timeout || now.Sub(s.sent[0]) > 2*cfg.Timeout) {
					finish(s, now, false)
				}
				// Nothing followed a marker within EndGrace: the answer
				// is over, short of servers (or past them).
				if len(s.sent) > 0 && s.ended && now.Sub(s.last) >= cfg.EndGrace {
					finish(s, now, true)
				}
			}
			if !sending(now) && inflight == 0 {
				break
			}
			if ctx.Err() != nil {
				// Give up on what is in flight: it counts as unanswered.
				for i := range srcs {
					for len(srcs[i].sent) > 0 {
						finish(&srcs[i], now, false)
					}
				}
				break
			}
		}
	}
	res.Elapsed = time.Since(start)
	if cfg.PID > 0 {
		mcpu1, err := ProcCPU(cfg.PID)
		if err != nil {
			return res, fmt.Errorf("loadgen: master process: %w", err)
		}
		res.MasterCPU = mcpu1 - mcpu0
	}
	if cpu1, err := SelfCPU(); err == nil {
		res.LoadCPU = cpu1 - cpu0
	}
	for _, got := range shortfalls {
		res.LostPackets += max(0, res.PacketsPerAnswer-got)
	}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		res.LatencyP50 = latencies[len(latencies)/2]
		res.LatencyP99 = latencies[len(latencies)*99/100]
	}
	return res, nil
}

// sameSet reports whether list holds each address of want exactly once
// and nothing else.
func sameSet(list []netip.AddrPort, want map[netip.AddrPort]bool) bool {
	if len(list) != len(want) {
		return false
	}
	seen := make(map[netip.AddrPort]bool, len(list))
	for _, a := range list {
		if !want[a] || seen[a] {
			return false
		}
		seen[a] = true
	}
	return true
}

// selfCPU is this process's CPU time (user + system).
// SelfCPU is this process's CPU time (user + system).
func SelfCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
