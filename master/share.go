package master

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"time"
)

// A fleet is several masters sharing one registry (package fleet keeps it
// on Redis). The core's part is pure: a peer's verified record is applied
// with Apply (the newest verification wins), a peer's removal with
// ApplyRemoval (only if nothing newer was verified here), a peer
// landmark's RTT with ApplyLandmarkRTT (peers.go), and the re-probes and
// expiries of listed servers are divided among the live instances by a
// Share. Heartbeats are not shared: each instance verifies the
// heartbeats it receives.
//
// # Rounds
//
// In a fleet a server's re-probes fall on its own grid: the instants
// k×interval + Phase(address), its re-probe interval apart; the next
// re-probe is due at the first point of the grid after its last
// verification (reprobeAtLocked). Its round is the grid period its last
// verification fell in (Round). Every instance holds the same
// LastVerified (the newest verification wins, Apply), so every instance
// computes the same round and the same next grid point, and the owner of
// the round re-probes it there; that verification falls in the next
// period, so the round moves on by exactly one each period, however late
// the re-probe went and however long its reply took, short of a whole
// interval. A heartbeat's verification in between leaves both alone (it
// falls in the same period). A restored server, re-verified by no one
// yet, is in round 0. A master alone keeps its plain schedule: the next
// re-probe one interval after the last verification.

// Share says which listed servers this instance re-probes and expires:
// Mine(a, round) for server a in its round (Round). Mine is called with
// the registry's lock held and must not call back into the registry. A
// nil Share (the default) makes every server this instance's.
type Share interface {
	Mine(a netip.AddrPort, round uint64) bool
}

// Phase is the offset of a's re-probe grid within its interval: a hash of
// the address, so that a fleet's re-probes spread over the period.
func Phase(a netip.AddrPort, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	var key [18]byte
	b16 := a.Addr().Unmap().As16()
	copy(key[:], b16[:])
	binary.BigEndian.PutUint16(key[16:], a.Port())
	return time.Duration(weight("phase", key[:]) % uint64(interval))
}

// Round is the round of the server at a, last verified at lastVerified,
// whose re-probe interval is interval: the number of the grid period
// (interval long, offset by Phase) lastVerified fell in; 0 for a zero
// lastVerified or interval.
func Round(a netip.AddrPort, lastVerified time.Time, interval time.Duration) uint64 {
	if lastVerified.IsZero() || interval <= 0 {
		return 0
	}
	t := lastVerified.UnixNano() - int64(Phase(a, interval))
	if t <= 0 {
		return 0
	}
	return uint64(t) / uint64(interval)
}

// roundLocked is e's round (Round; 0 while restored).
func (r *Registry) roundLocked(e *entry) uint64 {
	if e.restored() {
		return 0
	}
	_, interval := r.reprobeOf(e)
	return Round(e.Addr, e.LastVerified.Time(), interval)
}

// reprobeAtLocked is when e, verified at from, is re-probed next: from +
// interval alone; in a fleet (a Share set) the first point of its grid
// (k×interval + Phase) after from, the start of the round after from's.
// A new server's first re-probe may so come sooner than an interval after
// its listing.
func (r *Registry) reprobeAtLocked(e *entry, from time.Time, interval time.Duration) stamp {
	if r.share == nil || interval <= 0 {
		return stampOf(from.Add(interval))
	}
	k := Round(e.Addr, from, interval)
	return stamp(int64(k+1)*int64(interval) + int64(Phase(e.Addr, interval)))
}

// DefaultShareRecheck is how long a listed server whose re-probe is due
// but is another instance's share waits before this instance asks again
// whether it has become its own (the other instance died). Its owner's
// verification, applied with Apply, schedules the next re-probe anyway;
// so a server whose owner died is re-probed by its new owner within
// DefaultShareRecheck (or half its re-probe interval, if shorter) of the
// time it was due, plus the time the fleet takes to see the death.
const DefaultShareRecheck = 5 * time.Second

// SetShare sets the share of this instance; nil makes every server its
// own.
func (r *Registry) SetShare(s Share) {
	r.mu.Lock()
	r.share = s
	r.mu.Unlock()
}

// mineLocked reports whether e is this instance's to re-probe and expire
// in its current round.
func (r *Registry) mineLocked(e *entry) bool {
	return r.share == nil || r.share.Mine(e.Addr, r.roundLocked(e))
}

// LeftToPeers returns the due re-probes DueProbes left to the other
// instances of a fleet (their share), counted each time one was due here.
func (r *Registry) LeftToPeers() uint64 { return r.leftToPeers.Load() }

// shareRecheck is how long a due re-probe of another instance's server
// waits before it is looked at again.
func shareRecheck(interval time.Duration) time.Duration {
	return min(DefaultShareRecheck, max(interval/2, time.Millisecond))
}

// Apply lists (or updates) a server as another instance verified it: s
// is that instance's record, its LastVerified the version. A record no
// newer than what this registry holds changes nothing (ChangeNone), so
// two instances verifying one server at once converge on the later
// verification, whatever order the records arrive in. The server's
// silence is timed from s.LastVerified and its next re-probe is its game's
// interval after it; a record already silent for Timeout (a fleet
// restarted after a long stop) is kept for one more Timeout from now and
// re-probed at once by its owner, as Restore does. A check in flight here
// goes on. Apply refuses a new server beyond MaxServers
// (ReasonServerListFull) or one the configuration refuses; the
// per-address limit was the verifying instance's to apply.
func (r *Registry) Apply(now time.Time, s Server) (Change, Reason) {
	a, why := classify(s.Addr, r.conf().AllowLoopback, r.conf().RefusePrivate, r.conf().AddrMap)
	if why != OK {
		return ChangeNone, why
	}
	if !r.conf().Policy.Accepts(s.Game) {
		return ChangeNone, ReasonGamePolicy
	}
	if s.Protocol != int(int32(s.Protocol)) {
		return ChangeNone, ReasonBadProtocol // no reply could have listed it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ver := stampOf(s.LastVerified)
	e, ok := r.servers[keyOf(a)]
	if ok && e.Listed && ver <= e.LastVerified {
		return ChangeNone, OK
	}
	if !ok {
		if len(r.servers) >= r.conf().MaxServers {
			return ChangeNone, ReasonServerListFull
		}
		e = &entry{Addr: a, Family: s.Family, FirstSeen: stampOf(s.FirstSeen)}
		r.servers[keyOf(a)] = e
		r.perKey[addrKeyOf(a.Addr())]++
		r.pending++
	}
	info := packInfo(s.Info)
	change := ChangeRefreshed
	listing := !e.Listed || s.Game != e.Game || s.Protocol != int(e.Protocol) || s.Gametype != e.Gametype ||
		s.Empty() != e.Empty() || s.Full() != e.Full() || s.Family != e.Family
	switch {
	case !e.Listed:
		change = ChangeListed
		r.pending--
	case listing || s.Clients != int(e.Clients) || s.MaxClients != int(e.MaxClients) || info != e.info:
		change = ChangeUpdated
	}
	reverified := e.restored()
	// Its silence is timed from its verification there, unless that is
	// Timeout ago already: then from now, as a restored server.
	silentAgain := ver+stamp(r.conf().Timeout) <= stampOf(now)
	verified := ver
	if silentAgain {
		verified = stampOf(now)
	}
	hbGame := e.hbGame
	if g, ok := r.conf().Catalogue.ByName(s.Game); ok && g.Anonymous && len(g.Heartbeats) > 0 && e.hbGame == nil {
		hbGame = g
	}
	r.noteChangeLocked(e, listing || hbGame != e.hbGame, verified)
	r.tallyLocked(e, -1)
	e.Listed = true
	e.Family = s.Family
	e.Game, e.Protocol, e.Gametype = r.internLocked(s.Game), int32(s.Protocol), r.internLocked(s.Gametype)
	r.tallyLocked(e, 1)
	e.Clients, e.MaxClients = clamp32(s.Clients), clamp32(s.MaxClients)
	if info != e.info {
		e.info = info
	}
	// The bots its info tells of (g_humanplayers, humans, bots); the
	// ping-0 and suspected counts of player lists are each instance's
	// own re-probes'.
	if bots, told := botsOf(&Reply{Info: s.Info}, s.Clients); told {
		r.setCrowdLocked(keyOf(a), bots, true, 0, false)
	}
	if e.FirstSeen == 0 || (!s.FirstSeen.IsZero() && stampOf(s.FirstSeen) < e.FirstSeen) {
		e.FirstSeen = stampOf(s.FirstSeen)
	}
	e.hbGame = hbGame
	e.LastVerified = verified
	e.setRestored(silentAgain)
	e.Missed = 0
	_, interval := r.reprobeOf(e)
	e.NextProbe = r.reprobeAtLocked(e, s.LastVerified, interval)
	if silentAgain {
		// Silent for Timeout already: kept as a restored server, timed
		// from now and re-verified at once by its owner.
		e.NextProbe = stampOf(now)
	}
	if change != ChangeRefreshed || reverified {
		r.version.Add(1)
	}
	return change, OK
}

// Holds reports whether a record of a verified at verified would change
// nothing here (Apply would return ChangeNone): the server is listed, not
// restored, and verified at verified or later. A full read of a fleet's
// registry asks it before decoding a record, most of which it holds
// already.
func (r *Registry) Holds(a netip.AddrPort, verified time.Time) bool {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(a)]
	return ok && e.Listed && !e.restored() && stampOf(verified) <= e.LastVerified
}

// Verified is a listed server's address and last verification.
type Verified struct {
	Addr         netip.AddrPort
	LastVerified time.Time
}

// VerifiedBefore appends to dst the listed servers last verified before
// t (a restored server, verified by no one since, counts as verified
// before any t). It copies two fields a server, so that a fleet's full
// read can find what the shared registry no longer holds without copying
// the whole listing under the lock (Servers), and it lets go of the lock
// every VerifiedBatch servers, so that a lookup (the HTTP API's) or a
// verification waits for one batch, not for a million. A server added or
// removed meanwhile may be left out, as in a map changed while it is
// ranged over; each one given was listed and verified before t when it
// was looked at.
func (r *Registry) VerifiedBefore(t time.Time, dst []Verified) []Verified {
	st := stampOf(t)
	r.mu.Lock()
	n := len(r.servers)
	r.mu.Unlock()
	dst = slices.Grow(dst, n) // allocated without the lock
	r.mu.Lock()
	defer r.mu.Unlock()
	looked := 0
	for _, e := range r.servers {
		if e.Listed && (e.restored() || e.LastVerified < st) {
			dst = append(dst, Verified{e.Addr, e.LastVerified.Time()})
		}
		if looked++; looked%VerifiedBatch == 0 {
			r.mu.Unlock()
			if r.released != nil {
				r.released()
			}
			r.mu.Lock()
		}
	}
	return dst
}

// VerifiedBatch is how many servers VerifiedBefore looks at between two
// releases of the registry's lock: about a millisecond's work.
const VerifiedBatch = 4096

// ApplyRemoval removes a listed server as another instance removed it,
// unless this registry holds a verification of it newer than verified
// (the version of the record that instance removed); a restored server,
// verified by no one since, is removed whatever the version. It reports whether
// the server was removed. A server not listed here (unknown, or pending
// its first verification) is left alone.
func (r *Registry) ApplyRemoval(a netip.AddrPort, verified time.Time) bool {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(a)]
	if !ok || !e.Listed || (!e.restored() && e.LastVerified > stampOf(verified)) {
		return false
	}
	r.removeLocked(a, e)
	return true
}

// Rendezvous is the Share of instance Self among the Live instances of a
// fleet (Self included), by rendezvous hashing (Thaler and Ravishankar,
// 1996) with rotation: the live instances are ranked for each server by
// weight(instance, server address), heaviest first, and the server's
// owner in round k is the instance ranked k mod len(Live). So in round 0
// (and every len(Live)-th round) the owner is the plain rendezvous owner,
// and over len(Live) consecutive rounds every live instance owns the
// server once: each instance is a landmark that measures every server
// within len(Live) re-probe periods (a re-probe answered a whole
// interval late moves the round on by two: the instance it skipped comes
// in the next cycle), while each round still has exactly one owner, so
// the fleet
// re-probes each server once per period. Every instance that sees the
// same live set computes the same owner for every (server, round), with
// no coordination. When an instance leaves, the ranking of the others for
// a server does not change; in round 0 only its servers move. A
// Rendezvous is immutable; the fleet sets a new one when the live set
// changes.
type Rendezvous struct {
	Self string
	Live []string
	self int // index of Self in Live; -1 if absent
}

// NewRendezvous returns the share of self among live.
func NewRendezvous(self string, live []string) *Rendezvous {
	z := &Rendezvous{Self: self, Live: append([]string(nil), live...), self: -1}
	for i, id := range z.Live {
		if id == self {
			z.self = i
		}
	}
	return z
}

// Mine reports whether a is Self's in round: Owner(a, round) is Self.
// With Self not among Live (not yet seen live, or cut off from the fleet)
// it is true, so that an instance alone keeps re-probing its list.
func (z *Rendezvous) Mine(a netip.AddrPort, round uint64) bool {
	if z.self < 0 {
		return true
	}
	return z.owner(a, round) == z.self
}

// Owner returns the live instance whose share a is in round, "" if none
// is live.
func (z *Rendezvous) Owner(a netip.AddrPort, round uint64) string {
	if len(z.Live) == 0 {
		return ""
	}
	return z.Live[z.owner(a, round)]
}

// maxRanked is the live set ranked without allocating; a larger one
// allocates its weights.
const maxRanked = 16

func (z *Rendezvous) owner(a netip.AddrPort, round uint64) int {
	var key [18]byte
	b16 := a.Addr().Unmap().As16()
	copy(key[:], b16[:])
	binary.BigEndian.PutUint16(key[16:], a.Port())
	n := len(z.Live)
	var buf [maxRanked]uint64
	ws := buf[:0]
	if n > maxRanked {
		ws = make([]uint64, 0, n)
	}
	for _, id := range z.Live {
		ws = append(ws, weight(id, key[:]))
	}
	// heavier: ranked before (ties, which FNV makes rare, by id).
	heavier := func(i, j int) bool { return ws[i] > ws[j] || (ws[i] == ws[j] && z.Live[i] < z.Live[j]) }
	want := int(round % uint64(n))
	for i := range n {
		rank := 0
		for j := range n {
			if j != i && heavier(j, i) {
				rank++
			}
		}
		if rank == want {
			return i
		}
	}
	return 0 // not reached: the ranks are a permutation of 0..n-1
}

// weight is FNV-1a over the instance id and the address, then a 64-bit
// finalizer (splitmix64's) so that nearby addresses weigh independently.
// It is part of the fleet's protocol: every instance must compute it the
// same way.
func weight(id string, key []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	h = (h ^ 0xff) * prime // separates id from address
	for _, c := range key {
		h = (h ^ uint64(c)) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
