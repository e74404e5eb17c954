package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
)

// Version is the record format written by this package.
const Version = 1

// maxString bounds any string read back, so a corrupt length cannot make
// Load allocate much.
const maxString = master.MaxInfoBytes

// ErrCorrupt reports a record that cannot be decoded.
var ErrCorrupt = errors.New("store: corrupt record")

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Encode returns a server's record (its address is the key, not part of
// the value).
func Encode(srv master.Server) []byte {
	return appendRecord(make([]byte, 0, recordSize(srv)), srv)
}

func recordSize(srv master.Server) int {
	n := 64 + len(srv.Game) + len(srv.Gametype)
	for _, p := range srv.Info {
		n += 4 + len(p.Key) + len(p.Value)
	}
	return n
}

func appendRecord(b []byte, srv master.Server) []byte {
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(srv.Family))
	b = binary.AppendVarint(b, int64(srv.Protocol))
	b = binary.AppendVarint(b, int64(srv.Clients))
	b = binary.AppendVarint(b, int64(srv.MaxClients))
	b = binary.AppendVarint(b, nanos(srv.FirstSeen))
	b = binary.AppendVarint(b, nanos(srv.LastVerified))
	b = appendString(b, srv.Game)
	b = appendString(b, srv.Gametype)
	b = binary.AppendUvarint(b, uint64(len(srv.Info)))
	for _, p := range srv.Info {
		b = appendString(b, p.Key)
		b = appendString(b, p.Value)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader decodes a record. b and s hold the same bytes: b is parsed and
// the strings returned are slices of s, so a record costs one string
// allocation however many fields it has (Load of a large state file is
// dominated by allocations).
type reader struct {
	b   []byte
	s   string
	p   int
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.p:])
	if n <= 0 {
		r.err = ErrCorrupt
		return 0
	}
	r.p += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.p:])
	if n <= 0 {
		r.err = ErrCorrupt
		return 0
	}
	r.p += n
	return v
}

func (r *reader) int() int {
	v := r.varint()
	if v < -1<<31 || v > 1<<31-1 {
		r.err = ErrCorrupt
	}
	return int(v)
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > maxString || n > uint64(len(r.b)-r.p) {
		r.err = ErrCorrupt
		return ""
	}
	s := r.s[r.p : r.p+int(n)]
	r.p += int(n)
	return s
}

// Decode parses a record written by Encode. The Addr of the result is
// zero (it is the key). Decode never panics; every malformed input returns
// an error wrapping ErrCorrupt. The result does not alias v.
func Decode(v []byte) (master.Server, error) {
	var srv master.Server
	if len(v) == 0 || v[0] != Version {
		return srv, fmt.Errorf("%w: version", ErrCorrupt)
	}
	r := reader{b: v, s: string(v), p: 1}
	fam := r.uvarint()
	if fam > 255 {
		r.err = ErrCorrupt
	}
	srv.Family = game.Family(fam)
	srv.Protocol = r.int()
	srv.Clients = r.int()
	srv.MaxClients = r.int()
	srv.FirstSeen = fromNanos(r.varint())
	srv.LastVerified = fromNanos(r.varint())
	srv.Game = r.string()
	srv.Gametype = r.string()
	n := r.uvarint()
	// A count from the file is not trusted: it is bounded by the
	// protocol's limit and by the bytes left (each pair takes at least
	// two), before anything is allocated from it.
	if n > master.MaxInfoPairs || n > uint64(len(v)-r.p)/2 {
		r.err = ErrCorrupt
	}
	if r.err == nil && n > 0 {
		srv.Info = make([]master.Pair, 0, n)
		for range n {
			k := r.string()
			val := r.string()
			if r.err != nil {
				break
			}
			srv.Info = append(srv.Info, master.Pair{Key: k, Value: val})
		}
	}
	if r.err == nil && r.p != len(v) {
		r.err = ErrCorrupt
	}
	if r.err != nil {
		return master.Server{}, fmt.Errorf("%w: truncated or malformed", r.err)
	}
	srv.Listed = true
	return srv, nil
}
