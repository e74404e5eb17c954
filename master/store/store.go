// Package store keeps the master's registry on disk, in an embedded
// go.etcd.io/bbolt database, so that after a restart (a kill -9 included)
// every server that was listed is listed again at once.
//
// # Durability
//
// Put and Delete return only after the bbolt transaction holding them has
// been committed and fsync'ed (they go through DB.Batch, which groups
// concurrent callers into one transaction). So a change whose Put or Delete
// returned nil survives a crash or a kill -9 of the process; a change whose
// call had not returned may or may not. bbolt's copy-on-write pages mean a
// crash never leaves a half-written database.
//
// # Record format
//
// One bucket, "servers". Key: the server's address as
// netip.AddrPort.MarshalBinary (4 or 16 address bytes, then the port,
// little-endian). Value, version 1:
//
//	byte    version (1)
//	uvarint family
//	varint  protocol, clients, max clients
//	varint  first seen, last verified (Unix nanoseconds; 0 = zero time)
//	string  game, gametype          (uvarint length, bytes)
//	uvarint number of info pairs, then each key and value as strings
//
// Records with an unknown version, a truncated or oversized field, or
// trailing bytes are skipped and counted by Load, never fatal.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
)

// Version is the record format written by this package.
const Version = 1

// maxString bounds any string read back, so a corrupt length cannot make
// Load allocate much.
const maxString = master.MaxInfoBytes

var bucket = []byte("servers")

// ErrCorrupt reports a record that cannot be decoded.
var ErrCorrupt = errors.New("store: corrupt record")

// Store is the on-disk registry. It is safe for concurrent use (bbolt
// serialises writers; Batch groups them).
type Store struct {
	db *bolt.DB
}

// Open opens or creates the database at path. It waits at most timeout
// for another process's lock on the file (0 waits forever).
func Open(path string, timeout time.Duration) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database. It is safe to call more than once, but not
// concurrently with other methods.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

func key(a netip.AddrPort) []byte {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	b, _ := a.MarshalBinary()
	return b
}

// Put records a listed server, durably (see the package doc).
func (s *Store) Put(srv master.Server) error {
	k, v := key(srv.Addr), Encode(srv)
	return s.db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(k, v) })
}

// Delete removes a server, durably. Deleting an absent server is not an
// error.
func (s *Store) Delete(a netip.AddrPort) error {
	k := key(a)
	return s.db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Delete(k) })
}

// Load reads every stored server. Records that do not decode are skipped
// and counted in corrupt.
func (s *Store) Load() (servers []master.Server, corrupt int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			var a netip.AddrPort
			if a.UnmarshalBinary(k) != nil || !a.IsValid() {
				corrupt++
				return nil
			}
			srv, err := Decode(v)
			if err != nil {
				corrupt++
				return nil
			}
			srv.Addr = a
			servers = append(servers, srv)
			return nil
		})
	})
	return servers, corrupt, err
}

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
	b := make([]byte, 0, 64+len(srv.Game)+len(srv.Gametype)+len(srv.Info)*16)
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

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = ErrCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = ErrCorrupt
		return 0
	}
	r.b = r.b[n:]
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
	if n > maxString || n > uint64(len(r.b)) {
		r.err = ErrCorrupt
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Decode parses a record written by Encode. The Addr of the result is
// zero (it is the key). Decode never panics; every malformed input returns
// an error wrapping ErrCorrupt.
func Decode(v []byte) (master.Server, error) {
	var srv master.Server
	if len(v) == 0 || v[0] != Version {
		return srv, fmt.Errorf("%w: version", ErrCorrupt)
	}
	r := reader{b: v[1:]}
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
	if n > master.MaxInfoPairs {
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
	if r.err == nil && len(r.b) != 0 {
		r.err = ErrCorrupt
	}
	if r.err != nil {
		return master.Server{}, fmt.Errorf("%w: truncated or malformed", r.err)
	}
	srv.Listed = true
	return srv, nil
}
