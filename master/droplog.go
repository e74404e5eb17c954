package master

import (
	"log/slog"
	"net/netip"
	"sync"
)

// Logging the drops that refuse a whole class of servers. A server whose
// infoResponse carries a gametype, protocol or gamename the master refuses
// is refused again at each of its heartbeats, so counting the drop is not
// enough: an operator must see which server it is. Each (server address,
// reason) pair is logged once, at Warn, and remembered in a bounded set.
const (
	// MaxLoggedDrops bounds the (address, reason) pairs remembered as
	// logged: 142 bytes each, about 580 KB at the bound (heap measured
	// with runtime.MemStats around 4,096 IPv6 pairs). When it is full
	// the oldest pair is forgotten first, so that server's next refusal is
	// logged again.
	MaxLoggedDrops = 4096
	// MaxDropLogsPerTick bounds the lines logged between two Ticks (about
	// a second): heartbeats forged from many addresses cannot turn into as
	// many log lines. The lines held back are counted in one line at the
	// next Tick, and their pairs are not remembered, so a real server's
	// refusal is logged at its next heartbeat.
	MaxDropLogsPerTick = 16
)

// classReason reports a reason that refuses a server for what it is (its
// game, its address class, the content of its replies) rather than for
// load or timing: it will be refused the same way at every try.
func classReason(r Reason) bool {
	switch r {
	case ReasonLoopback, ReasonPrivate, ReasonUnknownHeartbeat, ReasonGamePolicy,
		ReasonMissingProtocol, ReasonBadProtocol, ReasonNoMaxClients, ReasonMissingClients,
		ReasonBadGametype, ReasonMissingGamename, ReasonBadGamename, ReasonGamenameMismatch:
		return true
	}
	return false
}

// serverKind reports a packet a server (or a peer master, for a server)
// sends: a refusal of one of these refuses a server, not a client.
func serverKind(k Kind) bool {
	switch k {
	case KindHeartbeat, KindInfoResponse, KindStatusResponse, KindRegister,
		KindQ4Heartbeat, KindQ4InfoResponse:
		return true
	}
	return false
}

type dropKey struct {
	addr netip.AddrPort
	why  Reason
}

// dropLog logs each (address, reason) once; see MaxLoggedDrops. mu guards
// every field.
type dropLog struct {
	mu       sync.Mutex
	seen     map[dropKey]struct{}
	order    []dropKey // ring of the pairs in seen, oldest at next once full
	next     int
	budget   int // lines left before the next Tick
	withheld int // lines held back since the last Tick
}

func newDropLog() *dropLog {
	return &dropLog{seen: make(map[dropKey]struct{}), budget: MaxDropLogsPerTick}
}

// note logs the refusal of addr for why, unless it was logged before or
// this Tick's budget is spent.
func (d *dropLog) note(log *slog.Logger, k Kind, addr netip.AddrPort, why Reason) {
	key := dropKey{addr, why}
	d.mu.Lock()
	if _, ok := d.seen[key]; ok {
		d.mu.Unlock()
		return
	}
	if d.budget == 0 {
		d.withheld++
		d.mu.Unlock()
		return
	}
	d.budget--
	if len(d.order) < MaxLoggedDrops {
		d.order = append(d.order, key)
	} else {
		delete(d.seen, d.order[d.next])
		d.order[d.next] = key
		d.next = (d.next + 1) % MaxLoggedDrops
	}
	d.seen[key] = struct{}{}
	d.mu.Unlock()
	log.Warn("refused server", "server", addr, "kind", k, "reason", why)
}

// tick renews the line budget, logging how many lines it held back.
func (d *dropLog) tick(log *slog.Logger) {
	d.mu.Lock()
	withheld := d.withheld
	d.budget, d.withheld = MaxDropLogsPerTick, 0
	d.mu.Unlock()
	if withheld > 0 {
		log.Warn("refused servers not logged", "count", withheld, "limit_per_tick", MaxDropLogsPerTick)
	}
}
