package world

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
)

// DefaultHeartbeatRate paces the start-up and shutdown heartbeats of a
// whole world (datagrams per second): 5,000 servers starting at once would
// overflow a master's receive buffer (212 KB by default on Linux, a few
// thousand small datagrams), which real servers, started at different
// times, never do.
const DefaultHeartbeatRate = 5000

var errOffLoopback = errors.New("world: destination is not loopback")

// Config tunes an Emulator. The zero value runs a world without masters.
type Config struct {
	// Masters receive the heartbeats of every Quake III family and Quake 4
	// server. They must be loopback addresses.
	Masters []netip.AddrPort
	// HeartbeatInterval is the period of heartbeats; 0 means
	// HeartbeatInterval (5 minutes). Tests shorten it.
	HeartbeatInterval time.Duration
	// HeartbeatRate paces the start-up and shutdown heartbeats, in
	// datagrams per second; 0 means DefaultHeartbeatRate. Server i (in
	// world order) starts at i/HeartbeatRate seconds.
	HeartbeatRate int
	// Wait is how replies wait for their due time (see WaitMode).
	Wait WaitMode
	// Dynamics is the mean time between changes of one server (a map
	// change, a player leaving or joining, with equal odds), drawn
	// uniformly from [0, 2*Dynamics) on a schedule seeded by the world's
	// seed; 0 keeps every server as the world file says.
	Dynamics time.Duration
	// RealTime runs the releaser on a SCHED_FIFO thread (Linux, needs
	// root or CAP_SYS_NICE; silently ordinary otherwise), so that replies
	// leave on time on a loaded machine.
	RealTime bool
	// Sockets chooses one socket per server or per port; the zero value
	// picks per server when the descriptor limit allows.
	Sockets SocketMode
	// Access is every client's access link (see AccessLink); the zero
	// value is none.
	Access AccessLink
	// Requesters gives some requesters (by loopback IP, compared
	// unmapped, any port) a network of their own: Requesters[ip][i]
	// replaces server i's (world order) Link for the replies to ip. So
	// a client and each master instance, on loopback IPs of their own,
	// see the RTTs their places imply (masters as landmarks).
	// Each slice has one Link per server; heartbeats keep Server.Link.
	Requesters map[netip.Addr][]Link
}

// LatenessKnown reports whether the q quantile (0..1) of lateness has
// enough samples to differ from the longest one: at least 1/(1-q), so
// 100 for P99 and 1,000 for P999.
func (s Stats) LatenessKnown(q float64) bool {
	return q < 1 && float64(s.LatenessSamples)*(1-q) >= 1-1e-9
}

// Stats counts what the emulator did. Lateness is how long after its due
// time each datagram was handed to the kernel.
type Stats struct {
	Servers int `json:"servers"`
	// Sockets is the number of UDP sockets; Addresses the distinct
	// loopback IPs they are bound to.
	Sockets   int `json:"sockets"`
	Addresses int `json:"addresses"`
	// Received counts datagrams read; Outcomes splits them by Outcome.
	Received uint64            `json:"received"`
	Outcomes map[string]uint64 `json:"outcomes"`
	// Sent counts datagrams handed to the kernel (replies and heartbeats);
	// Lost those dropped by a Link's loss; QueueFull those dropped by
	// MaxQueued; SendErrors those the kernel refused.
	Sent uint64 `json:"sent"`
	Lost uint64 `json:"lost"`
	// Gone counts the requests that gone servers (Server.Gone) did not
	// answer.
	Gone       uint64 `json:"gone,omitempty"`
	QueueFull  uint64 `json:"queue_full"`
	SendErrors uint64 `json:"send_errors"`
	// Heartbeats counts heartbeat datagrams queued.
	Heartbeats uint64 `json:"heartbeats"`
	// LatenessP50, P99 and P999 are upper bounds within HistogramBucket
	// (above HistogramMax: the longest lateness seen), over
	// LatenessSamples datagrams. A q quantile of fewer than 1/(1-q)
	// samples (1,000 for P999) is only the longest one: see
	// LatenessKnown.
	LatenessSamples uint64        `json:"lateness_samples"`
	LatenessP50     time.Duration `json:"lateness_p50"`
	LatenessP99     time.Duration `json:"lateness_p99"`
	LatenessP999    time.Duration `json:"lateness_p999"`
	// With an access link (Config.Access): LinkShaped counts replies
	// that crossed a client's downstream link, LinkWaitMean and
	// LinkWaitMax their queueing delay (transmission not included);
	// LinkDropped those dropped by its full queue; LinkUpDropped requests
	// dropped by a full upstream queue; LinkUnshaped datagrams passed
	// unshaped for want of room for the client (MaxAccessClients).
	LinkShaped    uint64        `json:"link_shaped,omitempty"`
	LinkDropped   uint64        `json:"link_dropped,omitempty"`
	LinkUpDropped uint64        `json:"link_up_dropped,omitempty"`
	LinkUnshaped  uint64        `json:"link_unshaped,omitempty"`
	LinkWaitMean  time.Duration `json:"link_wait_mean,omitempty"`
	LinkWaitMax   time.Duration `json:"link_wait_max,omitempty"`
}

// Emulator runs a world: one socket per server on loopback, one goroutine
// reading them all (epoll), one releasing replies at their due time, one
// for heartbeats and dynamics. Create it with Listen, run it with Run.
type Emulator struct {
	cfg     Config
	servers []serverState
	byLoop  map[netip.AddrPort]int // server index by bound loopback address
	socks   *sockets
	table   *loopnat.Table
	q       *queue
	resp    responder
	seed    uint64
	addrs   int
	nsocks  int

	// Owned by the reader goroutine (handle).
	rng      *rand.Rand
	replyBuf [][]byte
	up       *accessLinks
	// Owned by the releaser goroutine (shapeDown).
	down *accessLinks
	// masters are never clients of an access link: their verifying
	// queries come from elsewhere on the Internet.
	masters map[netip.AddrPort]bool

	linkShaped, linkDropped, linkUpDropped, linkUnshaped atomic.Uint64
	linkWaitSum, linkWaitMax                             atomic.Int64

	late                                                  histogram
	received, sent, lost, gone, queueFull, sendErr, beats atomic.Uint64
	outcomes                                              [numOutcomes]atomic.Uint64

	ran       atomic.Bool
	closeOnce sync.Once
}

// serverState is one running server. cur is replaced (never modified) by
// the clock goroutine when the server changes; lim belongs to the reader.
type serverState struct {
	cur atomic.Pointer[Server]
	lim limiter
	// lastReply is the due time (unix ns) of the last reply sent to a
	// client (not a master): when it reached the client.
	lastReply atomic.Int64
}

// Listen validates w, binds a socket for every server on its loopback
// address (see Server.Loopback for port 0 and taken ports) and returns an
// emulator ready to Run. The world's servers are copied.
func Listen(w World, cfg Config) (*Emulator, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	for _, m := range cfg.Masters {
		if !m.Addr().Unmap().IsLoopback() || m.Port() == 0 {
			return nil, fmt.Errorf("world: master %v is not a loopback address with a port", m)
		}
	}
	if err := cfg.Access.Validate(); err != nil {
		return nil, err
	}
	for ip, ls := range cfg.Requesters {
		if !ip.Unmap().IsLoopback() || ip.Unmap() != ip || len(ls) != len(w.Servers) {
			return nil, fmt.Errorf("world: requester %v: want an unmapped loopback IP and one link per server (%d), got %d", ip, len(w.Servers), len(ls))
		}
		for i, l := range ls {
			if l.RTT < 0 || l.Jitter < 0 || !(l.Loss >= 0 && l.Loss <= 1) {
				return nil, fmt.Errorf("world: requester %v, server %d: bad link %+v", ip, i, l)
			}
		}
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = HeartbeatInterval
	}
	if cfg.HeartbeatRate <= 0 {
		cfg.HeartbeatRate = DefaultHeartbeatRate
	}
	addrs := make([]netip.AddrPort, len(w.Servers))
	for i, s := range w.Servers {
		addrs[i] = s.Loopback
	}
	socks, bound, err := openSockets(addrs, cfg.Sockets)
	if err != nil {
		return nil, err
	}
	e := &Emulator{
		cfg:     cfg,
		servers: make([]serverState, len(w.Servers)),
		socks:   socks,
		q:       newQueue(),
		resp:    responder{chal: challenger{seed: maphash.MakeSeed()}},
		seed:    w.Seed,
		rng:     rand.New(rand.NewPCG(w.Seed, 0x4e7)),
		up:      newAccessLinks(cfg.Access, cfg.Access.UpRate),
		down:    newAccessLinks(cfg.Access, cfg.Access.Rate),
		masters: map[netip.AddrPort]bool{},
		byLoop:  make(map[netip.AddrPort]int, len(w.Servers)),
	}
	for _, m := range cfg.Masters {
		e.masters[m] = true
	}
	pairs := make([]loopnat.Pair, len(w.Servers))
	ips := map[netip.Addr]bool{}
	for i := range w.Servers {
		s := w.Servers[i]
		s.Players = append([]Player(nil), s.Players...)
		s.Loopback = bound[i]
		e.servers[i].cur.Store(&s)
		pairs[i] = loopnat.Pair{Public: s.Public, Loopback: bound[i]}
		e.byLoop[bound[i]] = i
		ips[bound[i].Addr()] = true
	}
	e.addrs = len(ips)
	e.nsocks = socks.count()
	if e.table, err = loopnat.New(pairs); err != nil {
		socks.close()
		return nil, err
	}
	return e, nil
}

// Table returns the public <-> loopback table with the addresses actually
// bound, for loopnat.Wrap or `scout-lab world --map-out`.
func (e *Emulator) Table() *loopnat.Table { return e.table }

// Close releases the sockets of an emulator that will not Run. After Run
// it does nothing. It is idempotent.
func (e *Emulator) Close() error {
	if e.ran.CompareAndSwap(false, true) {
		e.closeOnce.Do(e.socks.close)
	}
	return nil
}

// Run serves queries and sends heartbeats until ctx ends, then sends each
// server's shutdown heartbeats (paced by HeartbeatRate; pending replies are
// dropped, as when servers go down), closes the sockets and returns. It may
// be called once.
func (e *Emulator) Run(ctx context.Context) error {
	if !e.ran.CompareAndSwap(false, true) {
		return errors.New("world: Run called twice, or after Close")
	}
	defer e.closeOnce.Do(e.socks.close)

	rel := &releaser{q: e.q, mode: e.cfg.Wait, send: e.sendPacket, late: &e.late, realTime: e.cfg.RealTime}
	if e.down.on {
		rel.link = e.shapeDown
	}
	relDone := make(chan struct{})
	go func() { rel.run(context.Background()); close(relDone) }()

	readDone := make(chan error, 1)
	go func() {
		if e.cfg.RealTime {
			// The reader shares the queue's lock with the releaser: an
			// ordinary thread descheduled while holding it would hold a
			// real-time releaser back (priority inversion).
			lockRealTime()
		}
		readDone <- e.socks.readLoop(e.handle)
	}()

	clockCtx, stopClock := context.WithCancel(ctx)
	clockDone := make(chan struct{})
	go func() { e.clock(clockCtx, time.Now()); close(clockDone) }()

	var err error
	select {
	case <-ctx.Done():
		e.socks.stopReading()
		err = <-readDone
	case err = <-readDone:
	}
	stopClock()
	<-clockDone

	e.q.clear()
	now := time.Now()
	gap := time.Second / time.Duration(e.cfg.HeartbeatRate)
	k := 0
	for i := range e.servers {
		if e.sendHeartbeats(i, ReasonStop, now.Add(time.Duration(k)*gap), true) {
			k++
		}
	}
	rel.draining.Store(true)
	e.q.signal()
	<-relDone
	return err
}

// handle runs on the reader goroutine for every datagram.
func (e *Emulator) handle(sock int, from netip.AddrPort, b []byte, at time.Time) {
	e.received.Add(1)
	// The request crosses the client's upstream link first: it reaches
	// the server when it leaves the link. Masters have none.
	reply := !e.masters[from]
	if reply {
		switch leave, _, v := e.up.admit(from, at, len(b)); v {
		case linkDropped:
			e.linkUpDropped.Add(1)
			return
		case linkUnshaped:
			e.linkUnshaped.Add(1)
		default:
			at = leave
		}
	}
	st := &e.servers[sock]
	s := st.cur.Load()
	if reply && s.Gone {
		e.gone.Add(1)
		return
	}
	var o Outcome
	e.replyBuf, o = e.resp.respond(at, sock, s, &st.lim, from, b, e.replyBuf[:0])
	e.outcomes[o].Add(1)
	link := s.Link
	if ls, ok := e.cfg.Requesters[from.Addr().Unmap()]; ok {
		link = ls[sock]
	}
	for i, r := range e.replyBuf {
		e.replyBuf[i] = nil
		due, lost := shape(link, e.rng, at, false)
		if lost {
			e.lost.Add(1)
			continue
		}
		if !e.q.push(outPacket{due: due, sock: sock, to: from, b: r, reply: reply}) {
			e.queueFull.Add(1)
		}
	}
}

// shapeDown runs on the releaser goroutine for every datagram at its due
// time, when clients have a downstream link: a reply, due when it reaches
// the client's link, is queued again for when it has crossed the link, or
// dropped by a full queue. It reports whether it took p. The link sees the
// due time, not now, so the releaser's lateness does not move the model.
func (e *Emulator) shapeDown(p *outPacket, now time.Time) bool {
	if !p.reply || p.shaped {
		return false
	}
	leave, wait, v := e.down.admit(p.to, p.due, len(p.b))
	switch v {
	case linkDropped:
		e.linkDropped.Add(1)
		return true
	case linkUnshaped:
		e.linkUnshaped.Add(1)
		return false
	}
	e.linkShaped.Add(1)
	e.linkWaitSum.Add(int64(wait))
	if int64(wait) > e.linkWaitMax.Load() {
		e.linkWaitMax.Store(int64(wait))
	}
	p.due, p.shaped = leave, true
	if !leave.After(now) {
		return false
	}
	if !e.q.push(*p) {
		e.queueFull.Add(1)
	}
	return true
}

// sendPacket runs on the releaser goroutine.
func (e *Emulator) sendPacket(p outPacket) {
	if p.reply {
		// Before the send: the client may read the reply, and ask
		// LastReply, before the send returns.
		e.servers[p.sock].lastReply.Store(p.due.UnixNano())
	}
	if err := e.socks.send(p.sock, p.to, p.b); err != nil {
		e.sendErr.Add(1)
		return
	}
	e.sent.Add(1)
}

// LastReply returns when the last reply of the server bound at loopback
// reached its client (a master's queries are not counted): the due time
// the emulator sent it at; false if it has sent none. Safe to call at any
// time.
func (e *Emulator) LastReply(loopback netip.AddrPort) (time.Time, bool) {
	i, ok := e.byLoop[loopback]
	if !ok {
		return time.Time{}, false
	}
	ns := e.servers[i].lastReply.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// sendHeartbeats queues server i's heartbeats for reason r to every
// master, the first at at (plus the one-way delay unless now is set), and
// reports whether the server sends any.
func (e *Emulator) sendHeartbeats(i int, r Reason, at time.Time, now bool) bool {
	s := e.servers[i].cur.Load()
	pkts := heartbeats(s.Game, r)
	if len(pkts) == 0 || len(e.cfg.Masters) == 0 {
		return false
	}
	due := at
	if !now {
		due, _ = shape(Link{RTT: s.Link.RTT}, nil, at, true)
	}
	for _, m := range e.cfg.Masters {
		for k, b := range pkts {
			e.beats.Add(1)
			if !e.q.push(outPacket{due: due.Add(time.Duration(k) * ShutdownPairGap), sock: i, to: m, b: b}) {
				e.queueFull.Add(1)
			}
		}
	}
	return true
}

// Stats returns the counters so far. Safe to call at any time.
func (e *Emulator) Stats() Stats {
	st := Stats{
		Servers:         len(e.servers),
		Sockets:         e.nsocks,
		Addresses:       e.addrs,
		Received:        e.received.Load(),
		Outcomes:        map[string]uint64{},
		Sent:            e.sent.Load(),
		Lost:            e.lost.Load(),
		Gone:            e.gone.Load(),
		QueueFull:       e.queueFull.Load(),
		SendErrors:      e.sendErr.Load(),
		Heartbeats:      e.beats.Load(),
		LatenessSamples: e.late.count(),
		LatenessP50:     e.late.quantile(0.50),
		LatenessP99:     e.late.quantile(0.99),
		LatenessP999:    e.late.quantile(0.999),
		LinkShaped:      e.linkShaped.Load(),
		LinkDropped:     e.linkDropped.Load(),
		LinkUpDropped:   e.linkUpDropped.Load(),
		LinkUnshaped:    e.linkUnshaped.Load(),
		LinkWaitMax:     time.Duration(e.linkWaitMax.Load()),
	}
	if st.LinkShaped > 0 {
		st.LinkWaitMean = time.Duration(e.linkWaitSum.Load() / int64(st.LinkShaped))
	}
	for o := range numOutcomes {
		st.Outcomes[o.String()] = e.outcomes[o].Load()
	}
	return st
}

// ---- the clock: heartbeats and dynamics ----

type eventKind uint8

const (
	eventHeartbeat eventKind = iota // start-up or periodic heartbeat
	eventChange                     // dynamics
)

type event struct {
	at     time.Time
	server int
	kind   eventKind
	start  bool // the start-up heartbeat
}

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	ev := old[len(old)-1]
	*h = old[:len(old)-1]
	return ev
}

// clock sends start-up and periodic heartbeats and applies dynamics until
// ctx ends. It is the only goroutine that replaces servers' state.
func (e *Emulator) clock(ctx context.Context, start time.Time) {
	rng := rand.New(rand.NewPCG(e.seed, 0xd1ce))
	var h eventHeap
	gap := time.Second / time.Duration(e.cfg.HeartbeatRate)
	k := 0
	for i := range e.servers {
		if len(heartbeats(e.servers[i].cur.Load().Game, ReasonStart)) > 0 && len(e.cfg.Masters) > 0 {
			h = append(h, event{at: start.Add(time.Duration(k) * gap), server: i, kind: eventHeartbeat, start: true})
			k++
		}
		if e.cfg.Dynamics > 0 {
			h = append(h, event{at: start.Add(time.Duration(rng.Int64N(int64(2 * e.cfg.Dynamics)))), server: i, kind: eventChange})
		}
	}
	heap.Init(&h)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for len(h) > 0 {
		if d := time.Until(h[0].at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		ev := heap.Pop(&h).(event)
		switch ev.kind {
		case eventHeartbeat:
			r := ReasonPeriodic
			if ev.start {
				r = ReasonStart
			}
			e.sendHeartbeats(ev.server, r, time.Now(), false)
			ev.at, ev.start = ev.at.Add(e.cfg.HeartbeatInterval), false
		case eventChange:
			if r, ok := e.change(ev.server, rng); ok {
				e.sendHeartbeats(ev.server, r, time.Now(), false)
			}
			ev.at = ev.at.Add(time.Duration(rng.Int64N(int64(2*e.cfg.Dynamics)) + 1))
		}
		heap.Push(&h, ev)
	}
	<-ctx.Done()
}

// change applies one random change to server i and reports whether it
// calls for heartbeats, and why.
func (e *Emulator) change(i int, rng *rand.Rand) (Reason, bool) {
	st := &e.servers[i]
	s := *st.cur.Load()
	s.Players = append([]Player(nil), s.Players...)
	defer st.cur.Store(&s)
	switch rng.IntN(3) {
	case 0: // map change
		maps := profiles[s.Game].maps
		next := maps[0]
		for k, m := range maps {
			if m == s.Map {
				next = maps[(k+1)%len(maps)]
			}
		}
		s.Map = next
		return ReasonMapChange, true
	case 1: // a player leaves
		if len(s.Players) == 0 {
			return 0, false
		}
		s.Players = s.Players[:len(s.Players)-1]
		return ReasonEmptied, len(s.Players) == 0
	default: // a player joins
		if len(s.Players) < s.MaxClients {
			s.Players = append(s.Players, Player{Name: fmt.Sprintf("%s%d", playerNames[rng.IntN(len(playerNames))], len(s.Players)), Ping: 15 + rng.IntN(180)})
		}
		return 0, false
	}
}
