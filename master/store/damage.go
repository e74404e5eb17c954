package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Damage is what is wrong with a state file.
type Damage int

// The kinds of damage Open detects.
const (
	DamageEmpty   Damage = iota + 1 // a 0-byte file
	DamageNotBolt                   // not a bbolt database at all
	DamageForeign                   // a bbolt database, but not a scout state file
	DamageNewer                     // a scout state file of a newer format version
	DamageCorrupt                   // truncated or corrupted pages
)

func (d Damage) String() string {
	switch d {
	case DamageEmpty:
		return "empty file"
	case DamageNotBolt:
		return "not a bbolt database"
	case DamageForeign:
		return "not a scout state file"
	case DamageNewer:
		return "newer format"
	case DamageCorrupt:
		return "corrupt"
	}
	return fmt.Sprintf("Damage(%d)", int(d))
}

// maxCheckErrors bounds the consistency-check findings kept in a
// DamagedError (a torn file can yield one per page).
const maxCheckErrors = 3

// DamagedError reports a state file Open would not use.
type DamagedError struct {
	Path    string
	Damage  Damage
	Detail  string // what was found, in words
	MovedTo string // where the file now is; "" if it was left at Path
}

func (e *DamagedError) Error() string {
	var what string
	switch e.Damage {
	case DamageEmpty:
		what = "is empty (0 bytes)"
	case DamageNotBolt:
		what = "is not a bbolt database"
	case DamageForeign:
		what = "is a bbolt database but not a scout master state file"
	case DamageNewer:
		what = "was written by a newer scout"
	default:
		what = "is damaged"
	}
	msg := "store: state file " + e.Path + " " + what
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.MovedTo != "" {
		msg += "; moved aside to " + e.MovedTo + ", starting with an empty database"
	}
	return msg
}

// Open opens or creates the database at path. A damaged or foreign file
// (see the package doc) is moved aside and replaced by an empty database,
// which Store.Damage then reports; with o.RefuseDamaged, Open returns the
// *DamagedError instead. Other failures (permissions, the lock held by
// another process past o.Timeout, a *LockedError) are errors and touch
// nothing.
func Open(path string, o Options) (*Store, error) {
	db, dmg, err := openChecked(path, o.Timeout)
	if err != nil {
		return nil, err
	}
	if dmg == nil {
		return &Store{db: db}, nil
	}
	if o.RefuseDamaged {
		return nil, dmg
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if dmg.MovedTo, err = moveAside(path, now()); err != nil {
		return nil, fmt.Errorf("%v; moving it aside: %w", dmg, err)
	}
	db, dmg2, err := openChecked(path, o.Timeout)
	if err != nil {
		return nil, fmt.Errorf("%v; then: %w", dmg, err)
	}
	if dmg2 != nil {
		db.Close()
		return nil, fmt.Errorf("%v; then the new database: %v", dmg, dmg2)
	}
	return &Store{db: db, damage: dmg}, nil
}

// openChecked opens path with bbolt and checks it. A file Open must not
// use is returned as dmg (nil db, nil err); err is for everything else.
func openChecked(path string, timeout time.Duration) (db *bolt.DB, dmg *DamagedError, err error) {
	damaged := func(d Damage, format string, args ...any) *DamagedError {
		return &DamagedError{Path: path, Damage: d, Detail: fmt.Sprintf(format, args...)}
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("store: %w", err)
	case !fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("store: %s is not a regular file", path)
	case fi.Size() == 0:
		return nil, damaged(DamageEmpty, ""), nil
	default:
		if need, ok := highWater(path); ok && need > fi.Size() {
			return nil, damaged(DamageCorrupt, "truncated: its pages need %d bytes and the file has %d", need, fi.Size()), nil
		}
	}

	defer faultsPanic()()
	var f *os.File
	var openErr error
	opts := &bolt.Options{Timeout: timeout, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, openErr = os.OpenFile(name, flag, perm)
		return f, openErr
	}}
	var p any
	db, err = func() (db *bolt.DB, err error) {
		defer func() { p = recover() }()
		return bolt.Open(path, 0o600, opts)
	}()
	switch {
	case p != nil:
		// bbolt did not return its DB, so its mapping of the file stays
		// (once, at start); closing the file releases the lock.
		if f != nil {
			f.Close()
		}
		return nil, damaged(DamageCorrupt, "bbolt failed opening it: %v", p), nil
	case err == nil:
	case errors.Is(err, berrors.ErrTimeout):
		return nil, nil, &LockedError{Path: path, Waited: timeout, PID: lockHolder(path)}
	case openErr != nil:
		return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
	case errors.Is(err, berrors.ErrInvalid):
		return nil, damaged(DamageNotBolt, "%v", err), nil
	default:
		return nil, damaged(DamageCorrupt, "%v", err), nil
	}

	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	dmg, init, err := check(db, size)
	if dmg == nil && err == nil && init {
		err = initialise(db)
	}
	if dmg != nil || err != nil {
		db.Close()
		if dmg != nil {
			dmg.Path = path
		}
		return nil, dmg, err
	}
	return db, nil, nil
}

// check reports what is wrong with an open database (dmg), or whether it
// needs its buckets and marker (init: a new or a pre-marker file). It must
// run with faultsPanic in effect: it touches every page bbolt's own
// consistency check will read, so that a page past the end of the file or
// a wild page number faults here, where it is recovered, and not in the
// goroutine tx.Check starts, where it could not be.
func check(db *bolt.DB, size int64) (dmg *DamagedError, init bool, err error) {
	damaged := func(d Damage, format string, args ...any) {
		dmg = &DamagedError{Damage: d, Detail: fmt.Sprintf(format, args...)}
	}
	err = func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				damaged(DamageCorrupt, "bbolt failed reading it: %v", p)
			}
		}()
		return db.View(func(tx *bolt.Tx) error {
			if need := tx.Size(); need > size {
				damaged(DamageCorrupt, "truncated: its pages need %d bytes and the file has %d", need, size)
				return nil
			}
			var names []string
			if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				names = append(names, string(name))
				return nil
			}); err != nil {
				return err
			}
			meta, servers := tx.Bucket(metaBucket), tx.Bucket(bucket)
			switch {
			case meta != nil:
				if f := meta.Get(formatKey); string(f) != FormatName {
					damaged(DamageForeign, "its format marker is %q, not %q", f, FormatName)
					return nil
				}
				v, n := binary.Uvarint(meta.Get(versionKey))
				switch {
				case n <= 0 || v == 0:
					damaged(DamageCorrupt, "its format version is unreadable")
					return nil
				case v > Version:
					damaged(DamageNewer, "format version %d; this scout reads up to %d", v, Version)
					return nil
				case servers == nil:
					damaged(DamageCorrupt, "it has a format marker but no %q bucket", bucket)
					return nil
				}
			case len(names) == 0:
				init = true // created, then killed before the first commit
			case len(names) == 1 && servers != nil:
				init = true // written before the format marker existed
			default:
				damaged(DamageForeign, "no format marker; its buckets are %s", quoteList(names))
				return nil
			}
			for _, name := range names {
				touch(tx.Bucket([]byte(name)), 0)
			}
			for e := range tx.Check() {
				if dmg == nil {
					damaged(DamageCorrupt, "bbolt's consistency check: %v", e)
				} else if strings.Count(dmg.Detail, ";") < maxCheckErrors-1 {
					dmg.Detail += "; " + e.Error()
				}
			}
			return nil
		})
	}()
	if err != nil && dmg == nil {
		damaged(DamageCorrupt, "%v", err)
	}
	return dmg, init, nil
}

// bbolt's meta page, as bbolt writes it (native byte order) after a
// 16-byte page header: magic, version, page size, flags (uint32 each),
// root bucket (two uint64), freelist, high-water page id, txid, and an
// FNV-64a checksum of the fields before it (uint64 each).
const (
	boltMagic     = 0xED0CDAED
	boltVersion   = 2
	metaOff       = 16
	metaChecksum  = metaOff + 56
	metaEnd       = metaChecksum + 8
	minPageSize   = 1024
	maxPageShifts = 14 // bbolt looks for the second meta page up to 16 MB
)

// highWater reads bbolt's two meta pages and returns the size the newest
// valid one says the file has (high-water page id times page size), so
// that a truncated file is named as such before bbolt maps it. ok is false
// if no meta page is valid (bbolt then reports the file itself).
func highWater(path string) (need int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	meta := func(off int64) (pageSize, pgid, txid uint64, ok bool) {
		var b [metaEnd]byte
		if _, err := f.ReadAt(b[:], off); err != nil {
			return 0, 0, 0, false
		}
		h := fnv.New64a()
		h.Write(b[metaOff:metaChecksum])
		e := binary.NativeEndian
		if e.Uint32(b[metaOff:]) != boltMagic || e.Uint32(b[metaOff+4:]) != boltVersion || e.Uint64(b[metaChecksum:]) != h.Sum64() {
			return 0, 0, 0, false
		}
		return uint64(e.Uint32(b[metaOff+8:])), e.Uint64(b[metaOff+40:]), e.Uint64(b[metaOff+48:]), true
	}
	ps, pgid, txid, ok0 := meta(0)
	best := int64(0)
	if ok0 {
		best, ok = int64(pgid*ps), true
	}
	for i := range maxPageShifts + 1 {
		off := int64(minPageSize) << i
		if ok0 {
			off = int64(ps) // the second meta is one page in
		}
		ps1, pgid1, txid1, ok1 := meta(off)
		if ok1 && (!ok0 || txid1 > txid) {
			best, ok = int64(pgid1*ps1), true
		}
		if ok0 || ok1 {
			break
		}
	}
	return best, ok
}

// maxDepth bounds the nesting of buckets touch follows (scout writes
// none; a corrupted flag can make a record look like one).
const maxDepth = 4

// touch reads the first and last byte of every key and value in b and in
// the buckets nested in it.
func touch(b *bolt.Bucket, depth int) {
	var x byte
	b.ForEach(func(k, v []byte) error {
		if len(k) > 0 {
			x ^= k[0] ^ k[len(k)-1]
		}
		if len(v) > 0 {
			x ^= v[0] ^ v[len(v)-1]
		}
		if v == nil && depth < maxDepth {
			if c := b.Bucket(k); c != nil {
				touch(c, depth+1)
			}
		}
		return nil
	})
	runtime.KeepAlive(x) // the reads must happen
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	slices.Sort(q)
	return strings.Join(q, ", ")
}

// initialise creates the buckets and writes the format marker.
func initialise(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucket); err != nil {
			return err
		}
		m, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if err := m.Put(formatKey, []byte(FormatName)); err != nil {
			return err
		}
		return m.Put(versionKey, binary.AppendUvarint(nil, Version))
	})
}

// moveAside renames path to path.damaged-TIMESTAMP (with -2, -3, ...
// if that exists) and returns the new name.
func moveAside(path string, now time.Time) (string, error) {
	base := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	to := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, to); err != nil {
		return "", err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return to, nil
}
