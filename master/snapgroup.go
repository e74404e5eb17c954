package master

import (
	"bytes"
	"cmp"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/scout-discovery/scout/game"
)

const (
	stateEmpty uint8 = 1 << iota
	stateFull
	stateClone // another server's clone, left out under Config.OnePerCloneGroup
)

// snapEntry is one listed server in the answer snapshot: what an answer
// filters on and sends.
type snapEntry struct {
	ip       [16]byte // the address as published (after -m mapping), As16
	gametype string
	port     uint16
	state    uint8
	v6       bool
}

// addrPort returns the published address. The 16 bytes and the port are
// 40 bytes an entry where a netip.AddrPort (with its zone handle) made
// 56: one per listed server in every snapshot.
func (e *snapEntry) addrPort() netip.AddrPort {
	a := netip.AddrFrom16(e.ip)
	if !e.v6 {
		a = a.Unmap()
	}
	return netip.AddrPortFrom(a, e.port)
}

// compareSnapEntries orders entries by published address, IPv4 before
// IPv6, as netip.AddrPort.Compare does, without building the AddrPorts;
// then by gametype and state, so that the order is total and two entries
// that compare equal are the same (two servers mapped to one published
// address by -m are two entries).
func compareSnapEntries(a, b snapEntry) int {
	if a.v6 != b.v6 {
		if a.v6 {
			return 1
		}
		return -1
	}
	if c := bytes.Compare(a.ip[:], b.ip[:]); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.port, b.port), strings.Compare(a.gametype, b.gametype), cmp.Compare(a.state, b.state))
}

type groupKey struct {
	f     game.Family
	game  string
	proto int
}

// DefaultChunk is the most entries a chunk of a snapshot group holds
// (640 KB). A change copies the chunk it falls in, not the group, and
// encodes that chunk's packets again, not the whole answer (answer.go):
// about a millisecond at this size. A packet never spans two chunks, so
// an answer has at most one packet less than full per chunk: a group of
// up to DefaultChunk servers is answered in full packets as one encoded
// whole, and a larger one has 1-2 % more datagrams (IPv4 entries in
// 1,400-byte packets; chunks mostly hold 8,192 to 16,384 entries). At 2,048
// entries a chunk, a 5,000-server list took 27 datagrams instead of 26,
// two of them short mid-answer, each splitting the sender's segmented
// runs: more of the master's CPU per answer (BENCHMARKS.md, "Master").
const DefaultChunk = 16384

// chunk is a run of a group's entries, immutable, shared by every
// snapshot until a change falls in it.
type chunk struct {
	entries []snapEntry // sorted (compareSnapEntries), never empty
	// start is where its part of an answer begins (answer.go): each new
	// chunk starts elsewhere, so a list that fits one packet still turns
	// over as the listing changes.
	start int
}

// group is the listed servers of one family, game and protocol, sorted
// by published address, in chunks.
type group struct {
	key    groupKey
	chunks []*chunk
	starts []int // starts[i] is the group index of chunks[i].entries[0]
	n      int   // entries
	stride int   // coprime with n, about 0.618 * n (Select's rotation)
}

// newChunk returns a chunk of entries (which it keeps).
func (r *Registry) newChunk(entries []snapEntry) *chunk {
	n := len(entries)
	k := r.rotation.Add(1)
	return &chunk{entries: entries, start: int((k * uint64(coprimeStride(n))) % uint64(n))}
}

// applyGroup returns g (nil: none yet) with the entries rem removed and
// add added, both sorted and without an entry in common: the chunks no
// change falls in are shared with g, the others merged anew. It returns
// nil if no entry is left. A change goes to the chunk whose range holds
// it (from its first entry to the next chunk's first); equal entries are
// never split between two chunks (appendMerged), so a removal finds
// every copy in the chunk it goes to.
func (r *Registry) applyGroup(g *group, key groupKey, rem, add []snapEntry) *group {
	var old []*chunk
	if g != nil {
		old = g.chunks
	}
	out := make([]*chunk, 0, len(old)+len(add)/r.chunkMax+1)
	if len(old) == 0 {
		r.opsMissed.Add(uint64(len(rem)))
		out = r.appendMerged(out, add, true)
	}
	ri, ai := 0, 0
	for i, c := range old {
		// A chunk takes the changes below the next chunk's first entry
		// (the last chunk, all that are left).
		rj, aj := len(rem), len(add)
		if i+1 < len(old) {
			hi := old[i+1].entries[0]
			rj = ri + sort.Search(len(rem)-ri, func(x int) bool { return compareSnapEntries(rem[ri+x], hi) >= 0 })
			aj = ai + sort.Search(len(add)-ai, func(x int) bool { return compareSnapEntries(add[ai+x], hi) >= 0 })
		}
		if rj == ri && aj == ai {
			out = append(out, c)
			continue
		}
		out = r.appendMerged(out, r.mergeEntries(c.entries, rem[ri:rj], add[ai:aj]), false)
		ri, ai = rj, aj
	}
	if len(out) == 0 {
		return nil
	}
	ng := &group{key: key, chunks: out, starts: make([]int, len(out))}
	for i, c := range out {
		ng.starts[i] = ng.n
		ng.n += len(c.entries)
	}
	ng.stride = coprimeStride(ng.n)
	return ng
}

// mergeEntries returns old without rem and with add (all sorted), in a
// new slice. A removal not found in old is counted in opsMissed.
func (r *Registry) mergeEntries(old, rem, add []snapEntry) []snapEntry {
	out := make([]snapEntry, 0, max(len(old)-len(rem), 0)+len(add))
	j, k := 0, 0
	for i := 0; i < len(old); {
		if j < len(rem) {
			if c := compareSnapEntries(rem[j], old[i]); c == 0 {
				i, j = i+1, j+1
				continue
			} else if c < 0 {
				r.opsMissed.Add(1)
				j++
				continue
			}
		}
		if k < len(add) && compareSnapEntries(add[k], old[i]) < 0 {
			out = append(out, add[k])
			k++
			continue
		}
		out = append(out, old[i])
		i++
	}
	r.opsMissed.Add(uint64(len(rem) - j))
	return append(out, add[k:]...)
}

// appendMerged appends the chunks of entries (sorted, after every entry
// of out, and its own: the chunks keep it) to out: none if it is empty;
// joined to the chunk before if it is small (below a quarter of
// chunkMax) and the two fit in one; cut in equal pieces of at most
// chunkMax otherwise. With share, the pieces share entries' array: a
// group built from nothing (a restart's) is not copied again, and keeps
// its first array until the last of its first chunks is replaced, at
// worst its size once more. Without, each piece of a split chunk has an
// array of its own, so that a piece left unchanged does not keep its
// sibling's half alive after the sibling is replaced (growing a group
// server by server would leave most chunks holding twice their size).
func (r *Registry) appendMerged(out []*chunk, entries []snapEntry, share bool) []*chunk {
	n := len(entries)
	switch {
	case n == 0:
		return out
	case n < r.chunkMax/4 && len(out) > 0 && len(out[len(out)-1].entries)+n <= r.chunkMax:
		last := out[len(out)-1].entries
		out[len(out)-1] = r.newChunk(slices.Concat(last, entries))
		return out
	}
	pieces := (n + r.chunkMax - 1) / r.chunkMax
	lo := 0
	for p := 1; p <= pieces && lo < n; p++ {
		// Equal entries (servers -m maps to one address) stay in one
		// chunk, where applyGroup looks for them; so a chunk may hold
		// a few more than chunkMax.
		hi := max(n*p/pieces, lo+1)
		for hi < n && entries[hi-1] == entries[hi] {
			hi++
		}
		piece := entries[lo:hi:hi]
		if !share && pieces > 1 {
			piece = slices.Clone(piece)
		}
		out = append(out, r.newChunk(piece))
		lo = hi
	}
	return out
}

// appendMatching appends the addresses g lists for f, from the k-th
// start (k*stride modulo its size, for Select's rotation).
func (g *group) appendMatching(f filter, k uint64, dst []netip.AddrPort) []netip.AddrPort {
	if g.n == 0 {
		return dst
	}
	start := int((k * uint64(g.stride)) % uint64(g.n))
	ci := sort.SearchInts(g.starts, start+1) - 1
	off := start - g.starts[ci]
	for range g.n {
		if e := &g.chunks[ci].entries[off]; f.match(e) {
			dst = append(dst, e.addrPort())
		}
		if off++; off == len(g.chunks[ci].entries) {
			off = 0
			if ci++; ci == len(g.chunks) {
				ci = 0
			}
		}
	}
	return dst
}

// appendMatching appends the addresses c lists for f, from its start.
func (c *chunk) appendMatching(f filter, dst []netip.AddrPort) []netip.AddrPort {
	n := len(c.entries)
	for i := range n {
		j := c.start + i
		if j >= n {
			j -= n
		}
		if e := &c.entries[j]; f.match(e) {
			dst = append(dst, e.addrPort())
		}
	}
	return dst
}
