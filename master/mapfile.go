package master

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
)

// The mapping file gives many -m mappings at once: the table of an
// emulated world whose servers live on loopback addresses and are known
// by public ones (scout-lab world --map-out writes it; scout master
// --world-map reads it), each pair the mapping from a server's loopback
// address to its public one. It is JSON:
//
//	{"version":1,"pairs":[{"public":"81.169.12.34:27960","loopback":"127.1.0.7:27960"}]}
const (
	// MappingFileVersion is the version of the file WriteMappingFile
	// writes and ReadMappingFile reads.
	MappingFileVersion = 1
	// MaxMappingPairs bounds a mapping file: ten times the largest
	// emulated world (50,000 servers).
	MaxMappingPairs = 500_000
	// MaxMappingFileBytes bounds what ReadMappingFile accepts: about 80
	// bytes per pair.
	MaxMappingFileBytes = MaxMappingPairs * 100
)

// ErrMappingFile reports a mapping file that is not one.
var ErrMappingFile = errors.New("master: invalid mapping file")

// MappingPair is one pair of a mapping file: the address a server is known
// by and the one its socket is bound to.
type MappingPair struct {
	// Public is the server's identity: an IPv4 address outside
	// 127.0.0.0/8 and a non-zero port.
	Public netip.AddrPort `json:"public"`
	// Loopback is where the server's socket lives: an IPv4 address in
	// 127.0.0.0/8 and a non-zero port.
	Loopback netip.AddrPort `json:"loopback"`
}

// Mapping is the pair as an -m mapping: from the loopback address to the
// public one.
func (p MappingPair) Mapping() Mapping { return Mapping{From: p.Loopback, To: p.Public} }

type mappingFile struct {
	Version int           `json:"version"`
	Pairs   []MappingPair `json:"pairs"`
}

// WriteMappingFile writes pairs as a mapping file.
func WriteMappingFile(w io.Writer, pairs []MappingPair) (int64, error) {
	b, err := json.Marshal(mappingFile{Version: MappingFileVersion, Pairs: pairs})
	if err != nil {
		return 0, err
	}
	n, err := w.Write(append(b, '\n'))
	return int64(n), err
}

// ReadMappingFile reads a mapping file, refusing (wrapping ErrMappingFile)
// one over MaxMappingFileBytes or MaxMappingPairs, of another version, or
// with a pair whose sides are not as MappingPair says (IPv4-mapped
// addresses are unmapped first). Whether an address appears twice is the
// caller's to check (NewAddrMap does).
func ReadMappingFile(r io.Reader) ([]MappingPair, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxMappingFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMappingFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMappingFile, MaxMappingFileBytes)
	}
	var f mappingFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMappingFile, err)
	}
	if f.Version != MappingFileVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrMappingFile, f.Version, MappingFileVersion)
	}
	if len(f.Pairs) > MaxMappingPairs {
		return nil, fmt.Errorf("%w: %d pairs, more than %d", ErrMappingFile, len(f.Pairs), MaxMappingPairs)
	}
	for i, p := range f.Pairs {
		pub, lo := unmapPort(p.Public), unmapPort(p.Loopback)
		switch {
		case !pub.Addr().Is4() || pub.Port() == 0 || pub.Addr().IsLoopback():
			return nil, fmt.Errorf("%w: pair %d: public side %v is not a non-loopback IPv4 address with a port", ErrMappingFile, i, p.Public)
		case !lo.Addr().Is4() || lo.Port() == 0 || !lo.Addr().IsLoopback():
			return nil, fmt.Errorf("%w: pair %d: loopback side %v is not in 127.0.0.0/8 with a port", ErrMappingFile, i, p.Loopback)
		}
		f.Pairs[i] = MappingPair{Public: pub, Loopback: lo}
	}
	return f.Pairs, nil
}

// LoadMappingFile reads the mapping file at path (ReadMappingFile) and
// returns its pairs as mappings.
func LoadMappingFile(path string) ([]Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pairs, err := ReadMappingFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ms := make([]Mapping, len(pairs))
	for i, p := range pairs {
		ms[i] = p.Mapping()
	}
	return ms, nil
}

func unmapPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
