package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/q3"
	"github.com/scout-discovery/scout/q4"
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
// shared read-only by every answer until the listing changes.
//
// Fair rotation is by packet: the k-th answer sends the packets in order
// from k*stride modulo their count, stride coprime with the count, so over
// any n successive answers of an n-packet list every packet goes first and
// last once. The end marker goes on the last packet sent: each packet is
// stored with its marker, and the others are sent without it (a prefix of
// the same bytes). Within a packet the order is fixed for the snapshot;
// each rebuild starts the list at a new entry (the registry's rotation
// counter), so a list that fits one packet still turns over as the listing
// changes. UDP loses or delivers whole packets, and a client that keeps
// only its first N servers keeps whole packets in practice, so the packet
// is the unit that matters for who is left out.
type answer struct {
	pkts   [][]byte // each ends with its end marker (endLen bytes)
	endLen int
	every  bool // every packet keeps its marker (SplitOptions.EndOnEvery)
	bytes  int  // UDP payload of one whole reply
	stride int  // coprime with len(pkts)
}

// encodeAnswer encodes list in form.
func encodeAnswer(list []netip.AddrPort, form replyForm, every bool) (*answer, error) {
	a := &answer{every: every}
	var err error
	if form.q4 {
		a.pkts, err = q4.EncodeServers(list, 0, form.split.MaxBytes)
		a.every = true // no marker
	} else {
		opt := form.split
		opt.EndOnEvery = true // every packet keeps room for it anyway
		a.pkts, err = q3.EncodeServersResponses(list, opt)
		a.endLen = endLen(opt.End)
	}
	if err != nil {
		return nil, err
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
// snapshot's cache, encoding it on first use.
func (r *Registry) answer(now time.Time, f filter, form replyForm, every bool) (*answer, error) {
	snap := r.current(now)
	key := answerKey{f: f, form: form}
	if a, ok := snap.answers.Load(key); ok {
		return a.(*answer), nil
	}
	list := snap.appendMatching(f, r.rotation.Add(1), nil)
	r.encodings.Add(1)
	a, err := encodeAnswer(list, form, every)
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
	if f.anyProtocol {
		for _, g := range snap.byGame[gameKey{f.family, f.game}] {
			n += len(g.entries)
		}
	} else if g := snap.groups[groupKey{f.family, f.game, f.protocol}]; g != nil {
		n = len(g.entries)
	}
	if a, ok := snap.answers.Load(answerKey{f: f, form: form}); ok {
		return a.(*answer), n
	}
	return nil, n
}

// Encodings returns the server-list replies encoded on a query's demand
// (not from the cache, and not again by a snapshot rebuild).
func (r *Registry) Encodings() uint64 { return r.encodings.Load() }

// cache stores a as key's answer if the bounds leave room, and returns
// the answer to use: a, or one stored meanwhile by another query.
func (snap *snapshot) cache(key answerKey, a *answer) *answer {
	size := int64(a.bytes + len(a.pkts)*a.endLen)
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
