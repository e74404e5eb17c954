package geo

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/oschwald/maxminddb-golang/v2"
)

//go:generate go run ./internal/gen -npm internal/gen -out data/scout-geo.mmdb

// embedded is the generated database (see internal/gen). OpenBytes keeps it
// and never writes to it.
//
//go:embed data/scout-geo.mmdb
var embedded []byte

// Info is what is known about one address.
type Info struct {
	// Country is the ISO 3166-1 alpha-2 code, upper case, of the country the
	// address is in; "" when unknown.
	Country string
	// ASN is the number of the autonomous system that originates the
	// address's route; 0 when unknown.
	ASN uint32
	// ASOrg is the name of the organisation that holds ASN; "" when unknown,
	// and always "" when ASN is 0.
	ASOrg string
	// Prefix is the network every address of which gets this same answer
	// (the same Country, ASN and ASOrg, or the same lack of them) from the
	// DB that answered: the unit to cluster by. It contains no reserved
	// block unless the address is itself reserved, in which case it is that
	// block. It is the zero Prefix only for an invalid address.
	Prefix netip.Prefix
}

// A DB answers lookups from one or more layers of data. Earlier layers take
// precedence field by field: the country comes from the first layer that
// knows it, and the AS number with its organisation from the first layer
// that knows the number.
//
// A DB is safe for concurrent use, except that Close must not be called
// concurrently with Lookup.
type DB struct {
	layers []layer
	// closers are what this DB opened itself; Close releases them.
	closers []io.Closer
	// decodeErrors counts records that could not be decoded; such a layer
	// contributes nothing to that lookup.
	decodeErrors atomic.Uint64
}

// A layer is one source of data: an MMDB file or a table.
type layer interface {
	// lookup returns what the layer knows about addr, which is valid and not
	// reserved, and the network its answer (or lack of one) holds for.
	lookup(addr netip.Addr) (Info, error)
}

// Default returns the database embedded in the binary: country and AS data
// made by internal/gen from the tables listed in the package documentation.
// It is opened once, on first use, and is never closed; closing it does
// nothing. Default panics if the embedded file does not open, which the
// package's tests rule out.
func Default() *DB { return defaultDB() }

var defaultDB = sync.OnceValue(func() *DB {
	l, err := openMMDBBytes(embedded)
	if err != nil {
		panic(fmt.Sprintf("geo: embedded database: %v", err))
	}
	return &DB{layers: []layer{l}}
})

// Open opens MaxMind DB files given by the user, such as GeoLite2-Country,
// GeoLite2-City and GeoLite2-ASN or their GeoIP2 counterparts, and returns a
// DB in which they take precedence, in the order given, over the embedded
// data for the fields they provide. A Country or City file gives the
// country (falling back to the registered country when a network has no
// physical one, as for some anycast and satellite networks); an ASN or ISP
// file gives the AS number and organisation.
//
// With no paths, Open returns a DB equivalent to Default. Close releases the
// files.
func Open(paths ...string) (*DB, error) {
	db, err := OpenMMDB(paths...)
	if err != nil {
		return nil, err
	}
	db.layers = append(db.layers, Default().layers...)
	return db, nil
}

// OpenMMDB opens MaxMind DB files, read as Open reads them, but without the
// embedded data under them.
func OpenMMDB(paths ...string) (*DB, error) {
	db := &DB{}
	for _, p := range paths {
		l, err := openMMDB(p)
		if err != nil {
			db.Close()
			return nil, err
		}
		db.layers = append(db.layers, l)
		db.closers = append(db.closers, l)
	}
	return db, nil
}

// Stack returns a DB whose layers are those of dbs in order, so that dbs[0]
// takes precedence. For example, Stack(countries2019, ases2008) answers the
// country from one table and the AS from the other. The result uses the
// layers of dbs without copying them: it is valid until one of dbs is
// closed, and closing it closes nothing.
func Stack(dbs ...*DB) *DB {
	s := &DB{}
	for _, db := range dbs {
		s.layers = append(s.layers, db.layers...)
	}
	return s
}

// Lookup returns what db knows about addr, and whether it knows a country
// or an AS. An IPv4-mapped IPv6 address is looked up as the IPv4 address it
// carries. A reserved address (see Reserved) is never geolocated: Lookup
// reports false, with the reserved block as Info.Prefix, whatever the data
// says. So is the zero Addr, with a zero Info.
//
// A record that cannot be decoded (a damaged or foreign file) counts as
// unknown in that layer and is counted by DecodeErrors; Verify checks
// whole files up front.
func (db *DB) Lookup(addr netip.Addr) (Info, bool) {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() {
		return Info{}, false
	}
	if p, ok := Reserved(addr); ok {
		return Info{Prefix: p}, false
	}
	var out Info
	// The answer holds where every consulted layer's answer holds: all their
	// prefixes contain addr, so that is the longest of them.
	out.Prefix = netip.PrefixFrom(addr, 0).Masked()
	for _, l := range db.layers {
		li, err := l.lookup(addr)
		if err != nil {
			db.decodeErrors.Add(1)
			// What this layer says about the neighbourhood is unknown too.
			out.Prefix = netip.PrefixFrom(addr, addr.BitLen())
			continue
		}
		if li.Prefix.Bits() > out.Prefix.Bits() {
			out.Prefix = li.Prefix
		}
		if out.Country == "" {
			out.Country = li.Country
		}
		if out.ASN == 0 && li.ASN != 0 {
			out.ASN, out.ASOrg = li.ASN, li.ASOrg
		}
		if out.Country != "" && out.ASN != 0 {
			break
		}
	}
	out.Prefix = clipReserved(out.Prefix, addr)
	return out, out.Country != "" || out.ASN != 0
}

// DecodeErrors returns how many records db could not decode since it was
// opened. Each made a layer count as unknown for one lookup.
func (db *DB) DecodeErrors() uint64 { return db.decodeErrors.Load() }

// Verify checks every MaxMind DB file of db in full: its search tree and
// every record. It reads the whole file, which takes a while for a large one.
func (db *DB) Verify() error {
	for _, l := range db.layers {
		if m, ok := l.(*mmdb); ok {
			if err := m.r.Verify(); err != nil {
				return fmt.Errorf("geo: %s: %w", m.name, err)
			}
		}
	}
	return nil
}

// Close releases the files db opened itself. It is safe to call more than
// once; after Close, db must not be used.
func (db *DB) Close() error {
	var errs []error
	for _, c := range db.closers {
		errs = append(errs, c.Close())
	}
	db.closers = nil
	return errors.Join(errs...)
}

// mmdb is a layer read from a MaxMind DB file.
type mmdb struct {
	r    *maxminddb.Reader
	name string // the file's path, or "embedded"
}

// record holds the fields geo reads from a record. The key names are
// MaxMind's, shared by GeoLite2/GeoIP2 Country, City, ASN and ISP databases
// and by the embedded file.
type record struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	ASN   uint32 `maxminddb:"autonomous_system_number"`
	ASOrg string `maxminddb:"autonomous_system_organization"`
}

func openMMDB(path string) (*mmdb, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("geo: %w", err)
	}
	return &mmdb{r: r, name: path}, nil
}

func openMMDBBytes(b []byte) (*mmdb, error) {
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, err
	}
	return &mmdb{r: r, name: "embedded"}, nil
}

func (m *mmdb) Close() error { return m.r.Close() }

func (m *mmdb) lookup(addr netip.Addr) (Info, error) {
	if addr.Is6() && m.r.Metadata.IPVersion == 4 {
		// An IPv4-only file knows nothing about IPv6.
		return Info{Prefix: netip.PrefixFrom(netip.IPv6Unspecified(), 0)}, nil
	}
	res := m.r.Lookup(addr)
	var rec record
	if err := res.Decode(&rec); err != nil {
		return Info{}, err
	}
	info := Info{
		Country: rec.Country.ISOCode,
		ASN:     rec.ASN,
		Prefix:  res.Prefix(),
	}
	if info.Country == "" {
		info.Country = rec.RegisteredCountry.ISOCode
	}
	if !validCountry(info.Country) {
		info.Country = ""
	}
	if info.ASN != 0 {
		info.ASOrg = rec.ASOrg
	}
	if !info.Prefix.IsValid() || !info.Prefix.Contains(addr) {
		return Info{}, fmt.Errorf("%s: lookup of %v returned network %v", m.name, addr, info.Prefix)
	}
	return info, nil
}

// validCountry reports whether cc is two upper-case ASCII letters.
func validCountry(cc string) bool {
	return len(cc) == 2 && 'A' <= cc[0] && cc[0] <= 'Z' && 'A' <= cc[1] && cc[1] <= 'Z'
}
