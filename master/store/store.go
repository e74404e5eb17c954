// Package store keeps the master's registry on disk, in an embedded
// go.etcd.io/bbolt database, so that after a restart (a kill -9 included)
// every server that was listed is listed again at once. It is part of the
// master's shell: it owns a file; the decisions stay in package master.
//
// # Durability
//
// Apply writes a group of puts and deletes in one bbolt read-write
// transaction and returns after bbolt has committed it: the new pages
// written and fsync'ed, then the meta page written and fsync'ed. So
//
//   - a change whose Apply returned nil survives a kill -9 of the process
//     (and a power cut, as far as the disk honours fsync);
//   - a change in an Apply that had not returned is either all there or all
//     absent: bbolt's copy-on-write pages never leave half a transaction,
//     and a torn meta page is ignored in favour of the previous one.
//
// One Apply costs about one transaction's fsyncs whatever the number of
// changes in it, so the master's state writer (package masterd) is a group
// commit: the handler hands it every server verified or dropped, and it
// calls Apply with all those pending, at most once per commit interval
// (masterd.Config.CommitInterval, scout master --commit-interval; 100 ms by
// default), the first change after a quiet spell at once. A commit takes
// what is pending when it starts, so a server verified at time t is in the
// commit that starts at the latest at t + interval (later only while the
// commit before it is still running, when commits take longer than the
// interval) and is on disk when that commit returns. A kill -9 at time K
// therefore loses no server verified before K - interval - D, D being one
// commit's duration (medians of 2 ms for one server and 250 ms for 16,384
// in one commit on the busy machine of BENCHMARKS.md "Persistence"; the
// master exports the last and the longest as
// scout_master_state_last_commit_seconds and
// scout_master_state_max_commit_seconds). Servers verified later come back
// with their next heartbeat. A clean stop (SIGTERM) commits everything
// pending, in one transaction, before the master exits.
//
// # Damaged files
//
// Open never lets a damaged file crash the process. It reports, as a
// *DamagedError, a 0-byte file, a file that is not a bbolt database, a bbolt
// database that is not a scout state file (no format marker, or another
// one), a format version newer than this package writes, and a database
// that fails bbolt's consistency check (tx.Check) or makes bbolt panic or
// fault (truncated or overwritten pages). By default the file is then moved
// aside to PATH.damaged-YYYYMMDDTHHMMSSZ (never deleted) and a new, empty
// database is created at PATH: the master starts with an empty list that
// refills from heartbeats. With Options.RefuseDamaged, Open leaves the file
// where it is and returns the *DamagedError instead.
//
// # Layout
//
// Bucket "meta" holds the format marker, written when the file is created:
// key "format" = "scout-master-state", key "version" = the record version as
// a uvarint. A file from before the marker (a "servers" bucket and nothing
// else) is taken as version 1 and given the marker.
//
// Bucket "servers": key, the server's address as
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
//
// Bucket "history" (created by the first ApplyWithHistory; a file without
// it has no history): each server's player count per 5-minute slot, one
// record per server and UTC day, written by the same commits as the
// servers (ApplyWithHistory) and read back by LoadHistory; see
// historyBucket for its keys and values. At 288 slots a day a record is
// 289 bytes of value and an 8-byte key (20 for IPv6): 3,039 bytes of file
// per server for the 8 days package web keeps, bbolt's pages included
// (BenchmarkHistory_FileBytesPerServer).
//
// Bucket "players" (created by the first ApplyWithPlayers that writes
// one): where each player was seen recently, one record per player name
// (colour codes stripped), written by the same commits (ApplyWithPlayers)
// and read back by LoadPlayers; see playersBucket.
package store

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"runtime/debug"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/scout-discovery/scout/master"
)

var (
	bucket     = []byte("servers")
	metaBucket = []byte("meta")
	formatKey  = []byte("format")
	versionKey = []byte("version")
)

// FormatName is the format marker written in every state file.
const FormatName = "scout-master-state"

// Options configures Open. The zero value waits forever for the file's
// lock and moves a damaged file aside.
type Options struct {
	// Timeout bounds the wait for another process's lock on the file;
	// 0 waits forever. A timeout is an error, not damage.
	Timeout time.Duration
	// RefuseDamaged makes Open return a *DamagedError and leave a damaged
	// or foreign file in place, instead of moving it aside and starting
	// with an empty database.
	RefuseDamaged bool
	// Now names the moved-aside file (nil: time.Now).
	Now func() time.Time
}

// Store is the on-disk registry. It is safe for concurrent use (bbolt
// serialises writers), but Close must not run concurrently with the other
// methods.
type Store struct {
	db     *bolt.DB
	damage *DamagedError
}

// Damage returns what Open found wrong with the file it then moved aside,
// or nil if the file was sound (or new).
func (s *Store) Damage() *DamagedError { return s.damage }

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

// Path returns the database's file name.
func (s *Store) Path() string { return s.db.Path() }

func key(a netip.AddrPort) []byte {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	b, _ := a.MarshalBinary()
	return b
}

// Apply records puts (listed servers, by address) and deletes (addresses
// no longer listed) in one transaction, durably (see the package doc):
// when it returns nil all of them are on disk, and when it returns an
// error none is. Puts are applied before deletes. Deleting an absent
// server is not an error.
func (s *Store) Apply(puts []master.Server, deletes []netip.AddrPort) (err error) {
	if len(puts) == 0 && len(deletes) == 0 {
		return nil
	}
	return s.apply(puts, deletes, nil)
}

// apply is Apply with more work (if not nil) in the same transaction.
func (s *Store) apply(puts []master.Server, deletes []netip.AddrPort, more func(*bolt.Tx) error) (err error) {
	type kv struct{ k, v []byte }
	recs := make([]kv, len(puts))
	size := 0
	for _, p := range puts {
		size += recordSize(p)
	}
	buf := make([]byte, 0, size) // one allocation for every value
	for i, p := range puts {
		start := len(buf)
		buf = appendRecord(buf, p)
		recs[i] = kv{key(p.Addr), buf[start:len(buf):len(buf)]}
	}
	// bbolt inserts in key order touch each page once.
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	defer faultsPanic()()
	defer guard(&err, "writing")
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		for _, a := range deletes {
			if err := b.Delete(key(a)); err != nil {
				return err
			}
		}
		if more != nil {
			return more(tx)
		}
		return nil
	})
}

// Put records one listed server, durably: Apply with one put.
func (s *Store) Put(srv master.Server) error { return s.Apply([]master.Server{srv}, nil) }

// Delete removes one server, durably: Apply with one delete.
func (s *Store) Delete(a netip.AddrPort) error { return s.Apply(nil, []netip.AddrPort{a}) }

// Load reads every stored server. Records that do not decode are skipped
// and counted in corrupt.
func (s *Store) Load() (servers []master.Server, corrupt int, err error) {
	defer faultsPanic()()
	defer guard(&err, "loading")
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		servers = make([]master.Server, 0, b.Stats().KeyN)
		return b.ForEach(func(k, v []byte) error {
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

// guard turns a panic or a memory fault inside bbolt (a file damaged
// after Open checked it) into an error. It must be deferred by the
// goroutine that calls bbolt; it also makes faults on the memory-mapped
// file panics rather than fatal errors for the rest of that call.
func guard(err *error, doing string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("store: %s the state file: bbolt failed: %v", doing, r)
	}
}

// faultsPanic makes a fault on the memory-mapped file (a page past the end
// of a truncated file) a recoverable panic in the calling goroutine, and
// returns the function that restores the previous setting.
func faultsPanic() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// Backup runs fn with a consistent copy of the whole database while the
// store stays in use: its size, and a function writing it, from one read
// transaction (bbolt's copy-on-write keeps the pages as they were while
// writers go on), so a caller may announce the size before the bytes. The
// copy is itself a state file that Open accepts.
func (s *Store) Backup(fn func(size int64, write func(io.Writer) (int64, error)) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return fn(tx.Size(), tx.WriteTo)
	})
}
