package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// MaxCachedAnswers bounds the encoded server-list replies kept per listing
// snapshot, one per query shape (game, protocol, filters, address
// families, packet form). The shapes real clients send are a handful; a
// client cycling through made-up game names or gametype filters gets its
// answers encoded afresh, uncached, once the cache is full.
const MaxCachedAnswers = 64

// MaxCachedAnswerBytes bounds the bytes of the encoded replies kept per
// listing snapshot. A full answer of 1,000,000 servers is 7 MB (IPv4) to
// 19 MB (IPv6) of UDP payload: without it, 64 shapes of a large listing
// could hold more than a gigabyte. A reply that does not fit is encoded
// afresh for each query.
const MaxCachedAnswerBytes = 64 << 20

// replyForm is how a reply's packets are encoded.
type replyForm struct {
	q4    bool            // Doom 3 / Quake 4 servers packets
	split q3.SplitOptions // Quake III family; EndOnEvery is kept in answer.every
}

// answerKey is everything that decides a reply's bytes.
type answerKey struct {
	f    filter
	form replyForm
}

// answer is one query shape's reply for one snapshot, encoded once and
// shared read-only by every answer until its groups change.
//
// Its packets are encoded chunk by chunk of the groups it lists (parts):
// a packet never spans two chunks, so when a change falls in one chunk
// the answer of the next snapshot is the packets of the other chunks,
// taken as they are, and the changed chunk's encoded again
// (snapshot.encode). Within a chunk the entries start at the chunk's
// start, new with each new chunk, so a list that fits one packet still
// turns over as the listing changes.
//
// Fair rotation is by packet: the k-th answer sends the packets in order
// from k*stride modulo their count, stride coprime with the count, so over
// any n successive answers of an n-packet list every packet goes first and
// last once. The end marker goes on the last packet sent: each packet is
// stored with its marker, and the others are sent without it (a prefix of
// the same bytes). UDP loses or delivers whole packets, and a client that
// keeps only its first N servers keeps whole packets in practice, so the
// packet is the unit that matters for who is left out.
type answer struct {
	pkts   [][]byte // each ends with its end marker (endLen bytes)
	parts  []answerPart
	endLen int
	every  bool // every packet keeps its marker (SplitOptions.EndOnEvery)
	bytes  int  // UDP payload of one whole reply
	stride int  // coprime with len(pkts)
}

// answerPart is the packets of one chunk: pkts[at:at+n].
type answerPart struct {
	c     *chunk
	at, n int
}

// encodePackets encodes list in form, every packet with its end marker.
func encodePackets(list []netip.AddrPort, form replyForm) ([][]byte, error) {
	if form.q4 {
		return q4.EncodeServers(list, 0, form.split.MaxBytes)
	}
	opt := form.split
	opt.EndOnEvery = true // every packet keeps room for it anyway
	return q3.EncodeServersResponses(list, opt)
}

// groupsOf returns the groups f selects from.
func (s *snapshot) groupsOf(f filter) []*group {
	if f.anyProtocol {
		return s.byGame[gameKey{f.family, f.game}]
	}
	if g := s.groups[groupKey{f.family, f.game, f.protocol}]; g != nil {
		return []*group{g}
	}
	return nil
}

// encode returns the reply to f in form for s: for each chunk of the
// groups f selects, the packets of its matching entries, taken from prev
// (an answer to the same query of an earlier snapshot; nil if none) when
// prev encoded that very chunk.
func (s *snapshot) encode(f filter, form replyForm, every bool, prev *answer) (*answer, error) {
	var reuse map[*chunk]answerPart
	if prev != nil {
		reuse = make(map[*chunk]answerPart, len(prev.parts))
		for _, p := range prev.parts {
			reuse[p.c] = p
		}
	}
	a := &answer{every: every}
	var list []netip.AddrPort
	for _, g := range s.groupsOf(f) {
		for _, c := range g.chunks {
			var pkts [][]byte
			if p, ok := reuse[c]; ok {
				pkts = prev.pkts[p.at : p.at+p.n]
			} else if list = c.appendMatching(f, list[:0]); len(list) > 0 {
				var err error
				if pkts, err = encodePackets(list, form); err != nil {
					return nil, err
				}
			}
			a.parts = append(a.parts, answerPart{c: c, at: len(a.pkts), n: len(pkts)})
			a.pkts = append(a.pkts, pkts...)
		}
	}
	if len(a.pkts) == 0 {
		// No server: one packet with none, so the client hears an answer.
		pkts, err := encodePackets(nil, form)
		if err != nil {
			return nil, err
		}
		a.pkts = pkts
	}
	if form.q4 {
		a.every = true // no marker
	} else {
		a.endLen = endLen(form.split.End)
	}
	for _, p := range a.pkts {
		a.bytes += len(p)
	}
	if !a.every {
		a.bytes -= (len(a.pkts) - 1) * a.endLen
	}
	a.stride = coprimeStride(len(a.pkts))
	return a, nil
}

// answer returns the encoded reply to f in form at now, from the current
// snapshot's cache, encoding it on first use (from the packets of the
// chunks an earlier snapshot's answer shares with it).
func (r *Registry) answer(now time.Time, f filter, form replyForm, every bool) (*answer, error) {
	snap := r.current(now)
	key := answerKey{f: f, form: form}
	if a, ok := snap.answers.Load(key); ok {
		return a.(*answer), nil
	}
	r.encodings.Add(1)
	a, err := snap.encode(f, form, every, snap.prev[key])
	if err != nil {
		return nil, err
	}
	return snap.cache(key, a), nil
}

// cachedAnswer returns the reply to f in form at now if the current
// snapshot has it cached, and the number of servers in the groups f
// selects from (at least as many as the reply lists).
func (r *Registry) cachedAnswer(now time.Time, f filter, form replyForm) (*answer, int) {
	snap := r.current(now)
	n := 0
	for _, g := range snap.groupsOf(f) {
		n += g.n
	}
	if a, ok := snap.answers.Load(answerKey{f: f, form: form}); ok {
		return a.(*answer), n
	}
	return nil, n
}

// Encodings returns the server-list replies encoded on a query's demand
// (not from the cache, and not again by a snapshot build).
func (r *Registry) Encodings() uint64 { return r.encodings.Load() }

// cache stores a as key's answer if the bounds leave room, and returns
// the answer to use: a, or one stored meanwhile by another query.
func (snap *snapshot) cache(key answerKey, a *answer) *answer {
	size := a.size()
	if snap.nAnswers.Add(1) > MaxCachedAnswers {
		snap.nAnswers.Add(-1)
		return a
	}
	if snap.answerBytes.Add(size) > MaxCachedAnswerBytes {
		snap.nAnswers.Add(-1)
		snap.answerBytes.Add(-size)
		return a
	}
	if prev, loaded := snap.answers.LoadOrStore(key, a); loaded {
		snap.nAnswers.Add(-1)
		snap.answerBytes.Add(-size)
		return prev.(*answer)
	}
	return a
}

// size is the bytes of a's packets as stored (each with its marker).
func (a *answer) size() int64 { return int64(a.bytes + len(a.pkts)*a.endLen) }

// reads reports whether an answer to f reads a group changed (or a game
// whose groups changed, for AnyProtocol).
func (f filter) reads(changed map[groupKey]bool, games map[gameKey]bool) bool {
	if f.anyProtocol {
		return games[gameKey{f.family, f.game}]
	}
	return changed[groupKey{f.family, f.game, f.protocol}]
}

// carryAnswers caches in s the answers of base whose groups did not
// change, and keeps the others in s.prev (with base's own prev not
// encoded since), within MaxCachedAnswers and MaxCachedAnswerBytes.
func (s *snapshot) carryAnswers(base *snapshot, changed map[groupKey]bool, games map[gameKey]bool) {
	var prevBytes int64
	keep := func(key answerKey, a *answer) {
		if _, ok := s.prev[key]; ok || len(s.prev) >= MaxCachedAnswers || prevBytes+a.size() > MaxCachedAnswerBytes {
			return
		}
		if s.prev == nil {
			s.prev = map[answerKey]*answer{}
		}
		s.prev[key] = a
		prevBytes += a.size()
	}
	base.answers.Range(func(k, v any) bool {
		key, a := k.(answerKey), v.(*answer)
		if key.f.reads(changed, games) {
			keep(key, a)
		} else {
			s.cache(key, a)
		}
		return true
	})
	for key, a := range base.prev {
		if _, cached := base.answers.Load(key); !cached {
			keep(key, a)
		}
	}
}

// prewarm encodes into s the answers kept in s.prev, so that the first
// query of each shape after a build off the socket loop does not encode
// a large listing on it; the packets of unchanged chunks are reused.
func (r *Registry) prewarm(s *snapshot) {
	for key, prev := range s.prev {
		if _, ok := s.answers.Load(key); ok {
			continue
		}
		if a, err := s.encode(key.f, key.form, prev.every, prev); err == nil {
			s.cache(key, a)
		}
	}
}

// appendTo appends the reply's packets to dst, addressed to to, rotated
// for the k-th answer.
func (a *answer) appendTo(dst []Outgoing, to netip.AddrPort, kind Kind, k uint64) []Outgoing {
	n := len(a.pkts)
	start := int((k * uint64(a.stride)) % uint64(n))
	for i := range n {
		j := start + i
		if j >= n {
			j -= n
		}
		p := a.pkts[j]
		if !a.every && i != n-1 {
			p = p[:len(p)-a.endLen]
		}
		p = p[:len(p):len(p)] // shared: an append must copy
		dst = append(dst, Outgoing{To: to, Kind: kind, Payload: p})
	}
	return dst
}

// endLen is the length of the end marker e on the wire.
func endLen(e q3.End) int {
	with, _ := q3.ServersResponse{End: e}.AppendBinary(nil)
	without, _ := q3.ServersResponse{}.AppendBinary(nil)
	return len(with) - len(without)
}
