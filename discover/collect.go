package discover

import (
	"github.com/scout-discovery/scout/netscope"

	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Defaults of a [Config] whose fields are zero.
const (
	// DefaultQuiet is how long a master may stay silent after a packet
	// before its list is taken as complete when no end marker came. The
	// seed saw whole lists arrive "in quick succession", within 2 s of
	// the request; a gap of a second between two packets of one list is
	// already a lost packet or a master that marks no end.
	DefaultQuiet = time.Second
	// EndGrace is how long a list stays open after the end marker of
	// every form of the request arrived: q3.EndGrace, the Quake III
	// master protocol's rule.
	EndGrace = q3.EndGrace
	// DefaultMasterTimeout is how long a master has to send its first
	// packet (or, for Steam, each page) before it is asked again.
	DefaultMasterTimeout = 2 * time.Second
	// DefaultMasterAttempts is how many times a master is asked before it
	// is reported as not answering, the first query included.
	DefaultMasterAttempts = 2
)

// Bounds of one master's answer: defaults of a [Config] whose fields are
// zero. A master that never marks the end of its list, or keeps sending
// (entries, empty packets, Steam pages), is cut off at the first bound it
// passes: its list ends with EndLimit and an error naming the bound, and
// the servers it listed before still count. No real list comes near
// them.
const (
	// DefaultMaxServersQ3 bounds the entries (duplicates included) one
	// Quake III or Doom 3 family master may list: four times the 4,096
	// servers dpmaster holds by default, which is also what ioquake3's
	// client keeps (MAX_GLOBAL_SERVERS; id's Quake III kept 2,048).
	DefaultMaxServersQ3 = 16384
	// DefaultMaxServersSteam bounds the entries of one Steam master list:
	// Valve's master lists tens of thousands of servers for the largest
	// Source games, 231 a page; this is the prober's DefaultMaxTargets.
	DefaultMaxServersSteam = 1 << 16
	// DefaultMaxPackets bounds the reply packets one master may send,
	// garbled ones included: a 16,384-server list in the 112-entry packets
	// of id's master is 147 packets, and 65,536 Steam servers are 284
	// pages.
	DefaultMaxPackets = 1024
	// DefaultMaxListTime bounds one master's list, from its first query:
	// Quake III lists come within 2 s, and 284 Steam pages at 200 ms each
	// take a minute.
	DefaultMaxListTime = 2 * time.Minute
)

// How a master's list ended.
const (
	EndMarker  = "end marker" // the list said it was complete
	EndQuiet   = "quiet"      // no end marker; the master fell silent
	EndNoReply = "no reply"   // nothing came, after every attempt
	EndGarbage = "garbage"    // only packets that do not parse came
	EndPartial = "partial"    // a Steam page went unanswered mid-list
	EndLimit   = "limit"      // a bound of Config (MaxServers, MaxPackets, MaxListTime) was passed
	EndStopped = "stopped"    // the context ended first
)

// MasterReport is what one master did.
type MasterReport struct {
	Name     string         `json:"name"`
	Addr     netip.AddrPort `json:"address"`
	Protocol string         `json:"protocol"`
	Queries  int            `json:"queries"`  // requests sent, retries and Steam pages included
	Packets  int            `json:"packets"`  // reply packets that parsed, in whole or part
	Garbled  int            `json:"garbled"`  // reply packets that did not
	Listed   int            `json:"listed"`   // entries, duplicates included
	New      int            `json:"new"`      // servers no master had listed before
	Unusable int            `json:"unusable"` // entries that name no server (port 0, broadcast, ...)
	// Refused counts the servers a public master listed at local
	// addresses or at the master's own (netscope.Refused), not probed
	// unless Config.AllowLocal; as New, those no master had listed
	// before, so the reports add up to the run's distinct servers.
	Refused int    `json:"refused"`
	End     string `json:"end"` // how the list ended: EndMarker, EndQuiet, ...
	Error   string `json:"error,omitempty"`
	// FirstPacket is the time from the first query to the first packet;
	// Took to the end of the list (quiet windows included).
	FirstPacket time.Duration `json:"-"`
	Took        time.Duration `json:"-"`
	// RTT is the client's round trip to the master: from the last query
	// sent before its first packet to that packet.
	RTT time.Duration `json:"-"`
	// Landmark, LandmarkPackets and LandmarkRTTs are the master's landmark
	// id, the landmark packets it sent and its RTT to each server, by
	// address, with Config.Landmarks (landmarks.go).
	Landmark        string                           `json:"landmark,omitempty"`
	LandmarkPackets int                              `json:"landmark_packets,omitempty"`
	LandmarkRTTs    map[netip.AddrPort]time.Duration `json:"-"`
	// OtherLandmarks are the other landmarks' RTTs the master published
	// (a fleet instance publishes every instance's), by landmark id, then
	// by server address; the client has not measured its own RTT to them.
	OtherLandmarks map[string]map[netip.AddrPort]time.Duration `json:"-"`
	// PeerRTTs are the landmarks' RTTs to each other the master published
	// (landmarks.go): PeerRTTs[a][b] is landmark a's RTT to landmark b.
	PeerRTTs map[string]map[string]time.Duration `json:"-"`
	// PingsSent and Pings are the pings sent to the master after its
	// list (Config.LandmarkPings) and the round trip of each answered in
	// time, in order (ping.go); BestRTT takes the least sample.
	PingsSent int `json:"pings_sent,omitempty"`
	// Cookie reports that the master gave this client a cookie (a scout
	// master: cookie.go).
	Cookie bool            `json:"cookie,omitempty"`
	Pings  []time.Duration `json:"-"`
}

// Answered reports whether the master sent a usable list.
func (r MasterReport) Answered() bool { return r.Packets > 0 }

// collecting is a master's state during a run.
type collecting struct {
	Master
	rep      MasterReport
	start    time.Time // first query
	sentAt   time.Time // latest query
	attempts int       // queries of the current page
	pages    int
	seed     netip.AddrPort
	last     time.Time // latest packet
	lastErr  error     // latest parse error
	ends     int       // end markers received (one per form of a Q3 request)
	endSeen  bool      // every form's end marker came; done after EndGrace
	done     bool
	// Pings after the list (ping.go): while pinging, the list has ended
	// (pingEnd, at listEndAt) and a ping sent at pingAt (zero: none) is
	// awaited.
	pinging bool
	pingEnd string
	// cookie is the master's cookie for this client (cookie.go);
	// cookieAgain is set once the list was asked again with it.
	cookie      string
	cookieAgain bool
	listEndAt   time.Time
	pingAt      time.Time
}

// outgoing is a query to write.
type outgoing struct {
	b    []byte
	to   netip.AddrPort
	m    *collecting
	ping bool // a ping (ping.go), not a list query
}

// The master half of the session: poll, wake and receive take now and
// return the queries to write; each usable entry goes to list, each end
// of a list to the events.

// poll handles the timeouts due at now and returns the queries to send.
func (s *session) poll(now time.Time) []outgoing {
	var out []outgoing
	for _, m := range s.masters {
		if m.done {
			continue
		}
		switch {
		case m.pinging:
			if !m.pingAt.IsZero() && !now.Before(m.pingAt.Add(s.pingWait(m))) {
				s.pingsDone(now, m) // timed out: no more pings to m
			}
		case m.sentAt.IsZero():
			m.start = now
			out = append(out, s.ask(now, m)...)
		case s.overTime(now, m):
		case m.Protocol == ProtocolSteam && !now.Before(m.sentAt.Add(s.cfg.timeout())):
			if m.attempts < s.cfg.attempts() {
				out = append(out, s.ask(now, m)...)
			} else if m.rep.Packets == 0 {
				s.finish(now, m, EndNoReply, nil)
			} else {
				s.finish(now, m, EndPartial, fmt.Errorf("page %d unanswered after %d queries", m.pages+1, m.attempts))
			}
		case m.Protocol != ProtocolSteam && m.rep.Packets == 0 && !now.Before(m.sentAt.Add(s.cfg.timeout())):
			if m.attempts < s.cfg.attempts() && m.rep.Garbled == 0 {
				out = append(out, s.ask(now, m)...)
			} else {
				s.finish(now, m, EndNoReply, nil) // EndGarbage when garbage came
			}
		case m.endSeen && !now.Before(m.last.Add(EndGrace)):
			out = append(out, s.listEnded(now, m, EndMarker)...)
		case m.Protocol != ProtocolSteam && m.rep.Packets > 0 && !now.Before(m.last.Add(s.cfg.quiet())):
			out = append(out, s.listEnded(now, m, EndQuiet)...)
		}
	}
	if s.listsDone() {
		s.endLists(now)
	}
	return out
}

// ask returns the query datagrams of m: one per form of its request (see
// Request.Q3Also), or the next Steam page's.
func (s *session) ask(now time.Time, m *collecting) []outgoing {
	seed := m.seed
	if !seed.IsValid() {
		seed = m.Steam.Seed
	}
	req := m.Request
	if s.cfg.Landmarks {
		req = req.withLandmarks()
	}
	if !s.cfg.NoCookies {
		req = req.withCookie(m.cookie)
	}
	bs, err := req.queries(seed)
	if err != nil {
		s.finish(now, m, EndNoReply, fmt.Errorf("encoding the query: %w", err))
		return nil
	}
	m.sentAt = now
	m.attempts++
	out := make([]outgoing, len(bs))
	for i, b := range bs {
		m.rep.Queries++
		out[i] = outgoing{b: b, to: m.Addr, m: m}
	}
	return out
}

// wrote records the write of o at now; err is the socket's.
func (s *session) wrote(now time.Time, o outgoing, err error) {
	if err != nil && o.ping {
		s.pingsDone(now, o.m)
		return
	}
	if err != nil {
		s.finish(now, o.m, EndNoReply, fmt.Errorf("sending: %w", err))
		return
	}
	s.sent++
	s.out += int64(len(o.b))
}

// wake returns when poll next has work; zero when every master is done.
func (s *session) wake() time.Time {
	var w time.Time
	for _, m := range s.masters {
		if m.done {
			continue
		}
		var t time.Time
		switch {
		case m.pinging:
			if m.pingAt.IsZero() {
				continue
			}
			t = m.pingAt.Add(s.pingWait(m))
			if w.IsZero() || t.Before(w) {
				w = t
			}
			continue
		case m.endSeen:
			t = m.last.Add(EndGrace)
		case m.Protocol == ProtocolSteam || m.rep.Packets == 0:
			t = m.sentAt.Add(s.cfg.timeout())
		default:
			t = m.last.Add(s.cfg.quiet())
		}
		if end := m.start.Add(s.cfg.maxListTime()); end.Before(t) {
			t = end
		}
		if w.IsZero() || t.Before(w) {
			w = t
		}
	}
	return w
}

// receive handles a datagram on the master socket (from unmapped); it may
// return the next Steam page's query.
func (s *session) receive(now time.Time, from netip.AddrPort, b []byte) []outgoing {
	s.in += int64(len(b))
	m := s.byAddr[from]
	if m == nil {
		s.stray++
		return nil
	}
	if out, ok := s.receivePing(now, m, b); ok {
		return out
	}
	if out, ok := s.receiveCookie(now, m, b); ok {
		return out
	}
	if m.done {
		// A packet after the list ended (a late packet of a master that
		// marks every packet, or a quiet window that was too short): its
		// servers still count.
		if m.rep.End != EndQuiet && m.rep.End != EndMarker {
			return nil
		}
	}
	if !m.done && s.overTime(now, m) {
		return nil
	}
	if max := s.cfg.maxPackets(); m.rep.Packets+m.rep.Garbled+m.rep.LandmarkPackets >= max {
		s.finish(now, m, EndLimit, fmt.Errorf("sent more than %d packets (the bound per master, discover.Config.MaxPackets): the rest of its list is ignored", max))
		return nil
	}
	if s.receiveLandmarks(now, m, b) {
		if !m.done && m.rep.Packets > 0 {
			// The landmark runs follow the list (up to about 1.6 times
			// its bytes per landmark): more of the reply, so EndGrace and
			// Quiet run from the last of them, not from the end marker.
			m.last = now
		}
		return nil
	}
	p := m.parse(b)
	if len(p.servers) == 0 && !p.end && p.err != nil {
		m.rep.Garbled++
		m.lastErr = p.err
		return nil
	}
	if m.rep.Packets == 0 {
		m.rep.FirstPacket = now.Sub(m.start)
		m.rep.RTT = now.Sub(m.sentAt)
	}
	m.rep.Packets++
	m.last = now
	if p.err != nil {
		m.lastErr = p.err
	}
	m.rep.Listed += p.dropped
	m.rep.Unusable += p.dropped
	for _, ap := range p.servers {
		if max := s.cfg.maxServers(m.Protocol); m.rep.Listed >= max {
			s.finish(now, m, EndLimit, fmt.Errorf("listed more than %d servers (the bound per master, discover.Config.MaxServers): the rest of its list is ignored", max))
			return nil
		}
		m.rep.Listed++
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if !usable(ap) {
			m.rep.Unusable++
			continue
		}
		if why := netscope.Refused(m.Addr, ap); why != "" && !s.cfg.AllowLocal {
			if _, again := s.refusedSeen[ap]; !again {
				s.refusedSeen[ap] = struct{}{}
				m.rep.Refused++
				s.refused[string(why)]++
			}
			continue
		}
		s.list(m, ap)
	}
	if m.done {
		return nil
	}
	if p.end {
		m.ends++
	}
	switch {
	case p.end && m.ends >= m.forms():
		m.endSeen = true // complete unless more follows within EndGrace
	case p.end:
		// One form's list is complete; the others' are still coming.
	case m.Protocol == ProtocolSteam:
		m.pages++
		if !p.next.IsValid() {
			s.finish(now, m, EndLimit, fmt.Errorf("page %d has no seed for the next", m.pages))
			return nil
		}
		m.seed = p.next
		m.attempts = 0
		return s.ask(now, m)
	}
	return nil
}

// overTime ends m's list if it has gone on for MaxListTime at now.
func (s *session) overTime(now time.Time, m *collecting) bool {
	d := s.cfg.maxListTime()
	if now.Before(m.start.Add(d)) {
		return false
	}
	s.finish(now, m, EndLimit, fmt.Errorf("list not over after %v (the bound per master, discover.Config.MaxListTime): the rest of it is ignored", d))
	return true
}

// finish ends m's list at now, how and why, and queues the event.
func (s *session) finish(now time.Time, m *collecting, end string, err error) {
	if m.done {
		return
	}
	m.done = true
	m.rep.End = end
	m.rep.Took = now.Sub(m.start)
	if !m.listEndAt.IsZero() {
		m.rep.Took = m.listEndAt.Sub(m.start) // the list's time, its pings aside
	}
	if err == nil && m.rep.Packets == 0 && m.rep.Garbled > 0 {
		m.rep.End = EndGarbage
		err = m.lastErr
	}
	if err == nil && m.lastErr != nil && m.rep.Packets > 0 {
		err = fmt.Errorf("list kept up to a defect: %w", m.lastErr)
	}
	if err != nil {
		m.rep.Error = err.Error()
	} else if end == EndNoReply {
		m.rep.Error = fmt.Sprintf("no reply to %d queries", m.rep.Queries)
	}
	s.events = append(s.events, MasterDone{m.rep})
	if s.listsDone() {
		s.endLists(now)
	}
}

// listsDone reports that every master's list has ended.
func (s *session) listsDone() bool {
	for _, m := range s.masters {
		if !m.done {
			return false
		}
	}
	return true
}

// maxReadErrors is how many reads in a row may fail before a shell gives
// up on the master socket.
const maxReadErrors = 64

// How collect reads, so that a busy client does not take its own delay
// for a master's silence. A timeout of s (the end of a list EndGrace or
// Quiet after its last packet, a master asked again, a ping given up) is
// acted on only after a read has found the socket empty since the last
// datagram: a datagram that came while the client was not running (a
// landmark run right behind its list, on a loaded machine) is read
// first. A read always waits at least minRead, so that it looks at the
// socket even when a timeout is already due (a read whose deadline has
// passed returns at once without looking); a read that times out more
// than lateRead after its deadline may not have looked either (the
// deadline passed before it began), so it is tried once more before its
// silence counts. After maxUnchecked datagrams in a row the timeouts are
// acted on anyway, so that a master that never stops sending does not
// hold up the others.
const (
	minRead      = 5 * time.Millisecond
	lateRead     = 20 * time.Millisecond
	maxUnchecked = 64
)

// collect is the shell of [Ordered]'s listing: it drives the master half
// of s on conn until every list has ended or ctx ends, emitting s's events
// through emit as they come.
func collect(ctx context.Context, conn probe.Conn, s *session, emit func(Event)) error {
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, probe.ReadBufferSize)
	readErrors := 0
	send := func(now time.Time, out []outgoing) {
		for _, o := range out {
			_, err := conn.WriteToUDPAddrPort(o.b, o.to)
			s.wrote(now, o, err)
		}
	}
	flush := func() {
		for _, e := range s.takeEvents() {
			emit(e)
		}
	}
	defer flush()
	// empty: a read found the socket empty since the last datagram (or
	// nothing was asked yet); late: the last read timed out late;
	// unchecked: datagrams read since the socket was last found empty.
	empty, late, unchecked := true, false, 0
	for {
		now := time.Now()
		if empty || unchecked >= maxUnchecked {
			send(now, s.poll(now))
			unchecked = 0
		}
		flush()
		if s.listsDone() {
			return nil
		}
		deadline := s.wake()
		if floor := time.Now().Add(minRead); deadline.Before(floor) {
			deadline = floor
		}
		if err := conn.SetReadDeadline(deadline); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			s.stop(time.Now(), err)
			return err
		}
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		now = time.Now()
		switch {
		case err == nil:
			readErrors = 0
			empty, late = false, false
			unchecked++
			send(now, s.receive(now, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), buf[:n]))
		case errors.Is(err, os.ErrDeadlineExceeded):
			readErrors = 0
			wasLate := late
			late = now.Sub(deadline) > lateRead
			empty = !late || wasLate
		case !errors.Is(err, net.ErrClosed) && readErrors < maxReadErrors:
			readErrors++ // an ICMP error on some platforms; the socket lives on
		default:
			s.stop(now, err)
			return err
		}
	}
}
