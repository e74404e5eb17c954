package master

import (
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
)

// Pair is one info key and value, in the order the server sent them.
type Pair struct{ Key, Value string }

// Server is what the registry knows of one server: a value copy, safe to
// keep. Info is shared and must not be modified.
type Server struct {
	Addr       netip.AddrPort // source of its packets (Unmap()ed): its public address
	Listed     bool           // verified at least once and not dropped
	Game       string         // game name (catalogue name or gamename)
	Family     game.Family
	Protocol   int
	Gametype   string
	Clients    int // as the server says: bots included
	MaxClients int
	// Bots and SuspectedBots are the clients its replies tell are bots
	// and those the master suspects are (bots.go; Humans is the rest);
	// filled by Servers, Lookup and Verify.
	Bots, SuspectedBots int
	Info                []Pair

	FirstSeen     time.Time
	LastVerified  time.Time // last verified reply; zero if never
	LastHeartbeat time.Time
	NextProbe     time.Time // when it is re-probed next; zero if never
	Missed        int       // checks unanswered in a row (see Expire)

	// RTT is the median of this master's last RTTSamples round trips to
	// the server (see rtt.go), 0 if none measured; RTTMeasured is when
	// the last was taken.
	RTT         time.Duration
	RTTMeasured time.Time
	// Landmarks are the other landmarks' RTTs to it (a fleet's other
	// instances, peers.go), nil if none; filled by Servers and Lookup.
	Landmarks []LandmarkRTT
	// Sources are where the master learned of it besides its own
	// heartbeats (LastHeartbeat): upstream masters, scout peers, peer
	// masters' registers (sources.go); nil if none. Filled by Servers and
	// Lookup.
	Sources []SourceMark
}

// Empty reports a server with no client; Full one with as many clients as
// slots.
func (s *Server) Empty() bool { return s.Clients == 0 }
func (s *Server) Full() bool  { return s.Clients >= s.MaxClients }

// entry is what the registry keeps of one server, with its bookkeeping.
// It holds the fields of Server in a compact form (Server.Info is built
// from info, instants are stamps, names are interned) because there is
// one per listed server: 160 bytes, where a Server with its []Pair and
// five time.Time was 320 plus the pairs (see BENCHMARKS.md, "Memory per
// listed server"); its flags fill the last byte of the last word. server
// returns the Server.
type entry struct {
	Addr     netip.AddrPort
	Game     string     // interned
	Gametype string     // interned
	info     string     // packInfo's encoding of the info pairs
	hbGame   *game.Game // game announced by heartbeat tag; nil for DarkPlaces
	chk      *check     // the check in flight; nil if none
	rtt      rttRing    // this master's last round trips to it (rtt.go)

	// LastVerified is the last verified reply, or the restart for a
	// restored server not verified since (restored). A listed server is
	// silent from LastVerified+Timeout.
	FirstSeen, LastVerified, LastHeartbeat, NextProbe stamp

	Protocol            int32 // Q3: ParseInt(.., 32); Doom 3: a catalogue protocol
	Clients, MaxClients int32
	Missed              uint8 // checks unanswered in a row, at most MaxMissedCount
	Family              game.Family
	Listed              bool
	flags               entryFlags
}

// entryFlags are an entry's one-bit states.
type entryFlags uint8

const (
	// flagRestored: listed from the store (or a fleet's record silent
	// for Timeout), not verified by this process since.
	flagRestored entryFlags = 1 << iota
	// The answer snapshot's bookkeeping (snapshot.go):
	flagInSnap  // in the snapshot, once the changes recorded are applied
	flagTouched // in Registry.touched: to be looked at by the next build
	flagQueued  // has a node in the expiry queue
	flagEarly   // its silence moved earlier: needs a node of its own
	flagRemoved // removed from the registry
	flagKept    // the expiry queue's compaction has kept a node for it
	flagClone   // another listed server's clone (clones.go)
)

// restored reports flagRestored.
func (e *entry) restored() bool { return e.flags&flagRestored != 0 }

// setRestored sets or clears flagRestored.
func (e *entry) setRestored(on bool) {
	if on {
		e.flags |= flagRestored
	} else {
		e.flags &^= flagRestored
	}
}

// MaxMissedCount is where an entry's count of missed checks stops (it is
// one byte): a Config.MaxMissedProbes above it never drops a server for
// missed checks.
const MaxMissedCount = 255

// server returns e as a Server, with its info pairs.
func (e *entry) server() Server {
	return Server{
		Addr: e.Addr, Listed: e.Listed, Game: e.Game, Family: e.Family, Protocol: int(e.Protocol),
		Gametype: e.Gametype, Clients: int(e.Clients), MaxClients: int(e.MaxClients),
		Info:      unpackInfo(e.info),
		FirstSeen: e.FirstSeen.Time(), LastVerified: e.lastVerified(),
		LastHeartbeat: e.LastHeartbeat.Time(), NextProbe: e.NextProbe.Time(),
		Missed: int(e.Missed),
		RTT:    e.rtt.median(), RTTMeasured: e.rtt.at.Time(),
	}
}

// lastVerified is Server.LastVerified: zero for a restored server.
func (e *entry) lastVerified() time.Time {
	if e.restored() {
		return time.Time{}
	}
	return e.LastVerified.Time()
}

// expiry is when a listed e is silent for timeout.
func (e *entry) expiry(timeout time.Duration) stamp { return e.LastVerified + stamp(timeout) }

// Empty and Full are Server's.
func (e *entry) Empty() bool { return e.Clients == 0 }
func (e *entry) Full() bool  { return e.Clients >= e.MaxClients }

// stamp is an instant in Unix nanoseconds, 0 for none: 8 bytes where a
// time.Time is 24.
type stamp int64

func stampOf(t time.Time) stamp {
	if t.IsZero() {
		return 0
	}
	return stamp(t.UnixNano())
}

// Time returns s as a time.Time, the zero Time for 0.
func (s stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s))
}

// check is one verification in flight: its requests, sent up to
// 1+VerifyRetries times, each try with the challenge of its time. It is
// allocated per check and let go when the check ends, so an idle entry
// pays one pointer for it.
type check struct {
	sentAt time.Time // the first try; the check ends at sentAt+ChallengeLifetime
	reqs   game.Requests
	cause  ProbeCause
	tries  int                             // sent so far, 1..1+VerifyRetries
	tryAt  [1 + MaxVerifyRetries]stamp     // when each try was handed out (for the RTT)
	hbs    int                             // heartbeats seen while it runs, the one that started it included
	chals  [1 + MaxVerifyRetries]Challenge // the challenge of each try
}

// issued reports whether the reply's challenge is one of c's tries'.
func (c *check) issued(family game.Family, rep *Reply) bool {
	text, _ := rep.get("challenge")
	for _, ch := range c.chals[:c.tries] {
		if family == game.FamilyDoom3 && ch.Int32 == rep.Challenge32 ||
			family != game.FamilyDoom3 && ch.Text == text {
			return true
		}
	}
	return false
}

// packInfo encodes the info pairs the registry keeps of a reply as one
// string, "key\x00value\x00" per pair in wire order: one allocation of
// the bytes themselves, no slice, and nothing aliasing the packet. The
// echoed challenge is left out (it is the master's own, different every
// check, and never served), as are pairs with a NUL byte (neither family
// can send one); at most MaxInfoPairs pairs and MaxInfoBytes bytes of keys
// and values are kept.
func packInfo(in []Pair) string {
	n, size := 0, 0
	for _, p := range in {
		if skipPair(p) {
			continue
		}
		if n == MaxInfoPairs || size+len(p.Key)+len(p.Value) > MaxInfoBytes {
			break
		}
		n++
		size += len(p.Key) + len(p.Value)
	}
	var sb strings.Builder
	sb.Grow(size + 2*n)
	for _, p := range in {
		if n == 0 {
			break
		}
		if skipPair(p) {
			continue
		}
		sb.WriteString(p.Key)
		sb.WriteByte(0)
		sb.WriteString(p.Value)
		sb.WriteByte(0)
		n--
	}
	return sb.String()
}

func skipPair(p Pair) bool {
	return strings.EqualFold(p.Key, "challenge") || strings.IndexByte(p.Key, 0) >= 0 || strings.IndexByte(p.Value, 0) >= 0
}

// unpackInfo returns the pairs of packInfo's encoding s, slicing s.
func unpackInfo(s string) []Pair {
	if s == "" {
		return nil
	}
	out := make([]Pair, 0, strings.Count(s, "\x00")/2)
	for s != "" {
		k, rest, _ := strings.Cut(s, "\x00")
		v, rest, _ := strings.Cut(rest, "\x00")
		out = append(out, Pair{k, v})
		s = rest
	}
	return out
}

// MaxInternedNames bounds the game and gametype names the registry keeps
// one copy of; beyond it each entry keeps its own copy.
const MaxInternedNames = 4096

// internLocked returns the registry's copy of name, so that thousands of
// servers of one game share one string and none aliases a packet. r.mu
// must be held.
func (r *Registry) internLocked(name string) string {
	if c, ok := r.names[name]; ok {
		return c
	}
	c := strings.Clone(name)
	if len(r.names) < MaxInternedNames {
		r.names[c] = c
	}
	return c
}

func clamp32(n int) int32 {
	return int32(max(math.MinInt32, min(n, math.MaxInt32)))
}

// serverKey is a server's address as the servers map's key: 18 bytes,
// where a netip.AddrPort is 32 with its zone handle, so a map slot is 32
// bytes instead of 40. Addresses are unmapped, so the 16 bytes tell IPv4
// from IPv6; a zone is not part of the key (two servers at one link-local
// address on two interfaces would be one).
type serverKey struct {
	ip   [16]byte
	port uint16
}

func keyOf(a netip.AddrPort) serverKey { return serverKey{a.Addr().As16(), a.Port()} }

// addrKey is the per-address accounting key of sourceKey's prefix, in 16
// bytes: the IPv4 address (v4-mapped) or the IPv6 /64 (low half zero).
type addrKey [16]byte

func addrKeyOf(a netip.Addr) addrKey { return sourceKey(a).Addr().As16() }
