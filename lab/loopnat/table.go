package loopnat

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"

	"github.com/scout-discovery/scout/master"
)

// The table file is the master's mapping file (master.WriteMappingFile):
// scout master --world-map reads the table of a running world as -m
// mappings.
const (
	// FormatVersion is the version of the table file written by
	// [Table.WriteTo].
	FormatVersion = master.MappingFileVersion
	// MaxPairs bounds a table, and so a table file: ten times the largest
	// world package world is designed to run (50,000 servers).
	MaxPairs = master.MaxMappingPairs
	// MaxFileBytes bounds what [Read] accepts: about 80 bytes per pair.
	MaxFileBytes = master.MaxMappingFileBytes
)

// ErrInvalid reports a pair or a table that breaks the rules of [New].
var ErrInvalid = errors.New("loopnat: invalid table")

// loopbackNet is where every loopback side lives.
var loopbackNet = netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 0, 0, 0}), 8)

// Pair is one mapping: the address a server is known by, and the address
// its socket is bound to.
type Pair struct {
	// Public is the server's identity: an IPv4 address outside
	// 127.0.0.0/8 and a non-zero port.
	Public netip.AddrPort
	// Loopback is where the server's socket lives: an IPv4 address in
	// 127.0.0.0/8 and a non-zero port.
	Loopback netip.AddrPort
}

// Table is a bijection between public and loopback addresses. It is
// immutable after [New] and safe for concurrent use.
type Table struct {
	toLoop map[netip.AddrPort]netip.AddrPort
	toPub  map[netip.AddrPort]netip.AddrPort
}

// New builds a table. It refuses (wrapping ErrInvalid) more than MaxPairs
// pairs, a public side that is not IPv4 or is in 127.0.0.0/8, a loopback
// side that is not in 127.0.0.0/8 (IPv4-mapped addresses are unmapped
// first), port 0 on either side, and any address used twice on the same
// side.
func New(pairs []Pair) (*Table, error) {
	if len(pairs) > MaxPairs {
		return nil, fmt.Errorf("%w: %d pairs, more than %d", ErrInvalid, len(pairs), MaxPairs)
	}
	t := &Table{
		toLoop: make(map[netip.AddrPort]netip.AddrPort, len(pairs)),
		toPub:  make(map[netip.AddrPort]netip.AddrPort, len(pairs)),
	}
	for i, p := range pairs {
		pub, lo := unmap(p.Public), unmap(p.Loopback)
		switch {
		case !pub.Addr().Is4() || pub.Port() == 0 || loopbackNet.Contains(pub.Addr()):
			return nil, fmt.Errorf("%w: pair %d: public side %v is not a non-loopback IPv4 address with a port", ErrInvalid, i, p.Public)
		case !lo.Addr().Is4() || lo.Port() == 0 || !loopbackNet.Contains(lo.Addr()):
			return nil, fmt.Errorf("%w: pair %d: loopback side %v is not in 127.0.0.0/8 with a port", ErrInvalid, i, p.Loopback)
		}
		if _, dup := t.toLoop[pub]; dup {
			return nil, fmt.Errorf("%w: public address %v mapped twice", ErrInvalid, pub)
		}
		if _, dup := t.toPub[lo]; dup {
			return nil, fmt.Errorf("%w: loopback address %v mapped twice", ErrInvalid, lo)
		}
		t.toLoop[pub] = lo
		t.toPub[lo] = pub
	}
	return t, nil
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Len returns the number of pairs.
func (t *Table) Len() int { return len(t.toLoop) }

// Loopback returns where the server known as pub lives.
func (t *Table) Loopback(pub netip.AddrPort) (netip.AddrPort, bool) {
	lo, ok := t.toLoop[unmap(pub)]
	return lo, ok
}

// Public returns the public address of the server living at lo.
func (t *Table) Public(lo netip.AddrPort) (netip.AddrPort, bool) {
	pub, ok := t.toPub[unmap(lo)]
	return pub, ok
}

// Pairs returns the pairs sorted by public address.
func (t *Table) Pairs() []Pair {
	ps := make([]Pair, 0, len(t.toLoop))
	for pub, lo := range t.toLoop {
		ps = append(ps, Pair{Public: pub, Loopback: lo})
	}
	slices.SortFunc(ps, func(a, b Pair) int { return a.Public.Compare(b.Public) })
	return ps
}

// WriteTo writes the table as a mapping file (see the package doc), pairs
// sorted by public address.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	ps := make([]master.MappingPair, 0, t.Len())
	for _, p := range t.Pairs() {
		ps = append(ps, master.MappingPair{Public: p.Public, Loopback: p.Loopback})
	}
	return master.WriteMappingFile(w, ps)
}

// Read reads a table written by WriteTo and checks it with New.
func Read(r io.Reader) (*Table, error) {
	ps, err := master.ReadMappingFile(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	pairs := make([]Pair, len(ps))
	for i, p := range ps {
		pairs[i] = Pair{Public: p.Public, Loopback: p.Loopback}
	}
	return New(pairs)
}

// Load reads the table file at path (written by `scout-lab world --map-out`).
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
