package steammaster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Sentinel errors; every parser error wraps one of them.
var (
	// ErrNotSteamMaster reports a packet that is neither a query (0x31) nor
	// a reply (FF FF FF FF 66 0A).
	ErrNotSteamMaster = errors.New("steammaster: not a Steam master packet")
	// ErrTruncated reports a packet that ends inside a field.
	ErrTruncated = errors.New("steammaster: truncated packet")
	// ErrMalformed reports a bad seed address or bytes after the end of a
	// query.
	ErrMalformed = errors.New("steammaster: malformed packet")
	// ErrBadField reports a value the encoder refuses.
	ErrBadField = errors.New("steammaster: field cannot be encoded")
)

// TypeQuery is the first byte of a query: '1'.
const TypeQuery = 0x31

// replyHeader starts every reply.
var replyHeader = [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0x66, 0x0A}

// Sizes.
const (
	// EntrySize is the size of one address in a reply: IPv4 and a
	// big-endian port.
	EntrySize = 6
	// HeaderSize is the size of a reply's header.
	HeaderSize = len(replyHeader)
	// MaxReplySize is the default byte budget of one reply packet for
	// [SplitReply]: 231 entries after the header, fitting a 1400-byte
	// Steam datagram.
	MaxReplySize = HeaderSize + 231*EntrySize
	// MaxFilterLen bounds the filter string the decoder accepts; Valve
	// documents no limit, and real filters are tens of bytes.
	MaxFilterLen = 1024
)

// Region is the region byte of a query.
type Region uint8

// Regions, as Valve documents them.
const (
	RegionUSEast       Region = 0x00
	RegionUSWest       Region = 0x01
	RegionSouthAmerica Region = 0x02
	RegionEurope       Region = 0x03
	RegionAsia         Region = 0x04
	RegionAustralia    Region = 0x05
	RegionMiddleEast   Region = 0x06
	RegionAfrica       Region = 0x07
	RegionAll          Region = 0xFF // "rest of the world": every region
)

// Message is one Steam master packet.
type Message interface {
	AppendBinary(b []byte) ([]byte, error)
}

// Parse decodes a query or a reply. The result is [Query] or [Reply]; a
// reply that breaks off inside an entry comes back with the entries that
// parsed and an error wrapping [ErrTruncated].
func Parse(b []byte) (Message, error) {
	if len(b) > 0 && b[0] == TypeQuery {
		q, err := ParseQuery(b)
		if err != nil {
			return nil, err
		}
		return q, nil
	}
	if len(b) > 0 && bytes.HasPrefix(replyHeader[:], b[:min(len(b), HeaderSize)]) {
		r, err := ParseReply(b)
		if err != nil && len(r.Servers) == 0 && !r.End {
			return nil, err
		}
		return r, err
	}
	return nil, fmt.Errorf("%w: first bytes % x", ErrNotSteamMaster, b[:min(len(b), HeaderSize)])
}

// Query asks a master for servers:
//
//	31 <region> <seed "ip:port"> 00 <filter> 00
type Query struct {
	Region Region `json:"region"`
	// Seed is where the list resumes: 0.0.0.0:0 for the first query, then
	// the last address of the previous reply ([Reply.Next]).
	Seed netip.AddrPort `json:"seed"`
	// Filter is the raw filter string, e.g. `\appid\240\dedicated\1`;
	// [Filter] builds one. Empty means every server.
	Filter string `json:"filter"`
}

// FirstSeed returns the seed of a first query, 0.0.0.0:0, which is also
// the terminator of a reply list.
func FirstSeed() netip.AddrPort { return netip.AddrPortFrom(netip.IPv4Unspecified(), 0) }

// ParseQuery decodes a query. The seed must be an IPv4 "ip:port" and both
// strings NUL-terminated. Lenient: the region byte is not checked against
// the documented ones.
func ParseQuery(b []byte) (Query, error) {
	if len(b) == 0 || b[0] != TypeQuery {
		return Query{}, fmt.Errorf("%w: not a query", ErrNotSteamMaster)
	}
	if len(b) < 2 {
		return Query{}, fmt.Errorf("region: %w", ErrTruncated)
	}
	q := Query{Region: Region(b[1])}
	seed, rest, ok := strings.Cut(string(b[2:]), "\x00")
	if !ok {
		return Query{}, fmt.Errorf("seed: no NUL terminator: %w", ErrTruncated)
	}
	ap, err := netip.ParseAddrPort(seed)
	if err != nil || !ap.Addr().Is4() {
		return Query{}, fmt.Errorf("%w: seed %q is not an IPv4 ip:port", ErrMalformed, seed)
	}
	q.Seed = ap
	filter, after, ok := strings.Cut(rest, "\x00")
	if !ok {
		return Query{}, fmt.Errorf("filter: no NUL terminator: %w", ErrTruncated)
	}
	if len(filter) > MaxFilterLen {
		return Query{}, fmt.Errorf("%w: filter of %d bytes, limit %d", ErrMalformed, len(filter), MaxFilterLen)
	}
	if after != "" {
		return Query{}, fmt.Errorf("%w: %d bytes after the filter", ErrMalformed, len(after))
	}
	q.Filter = filter
	return q, nil
}

// AppendBinary appends the query. The seed must be IPv4 (an IPv4-mapped
// IPv6 address is unmapped).
func (q Query) AppendBinary(b []byte) ([]byte, error) {
	seed := netip.AddrPortFrom(q.Seed.Addr().Unmap(), q.Seed.Port())
	if !seed.Addr().Is4() {
		return b, fmt.Errorf("%w: seed %v is not IPv4", ErrBadField, q.Seed)
	}
	if strings.IndexByte(q.Filter, 0) >= 0 || len(q.Filter) > MaxFilterLen {
		return b, fmt.Errorf("%w: filter has a NUL or exceeds %d bytes", ErrBadField, MaxFilterLen)
	}
	b = append(b, TypeQuery, byte(q.Region))
	b = append(b, seed.String()...)
	b = append(b, 0)
	b = append(b, q.Filter...)
	return append(b, 0), nil
}

// Reply is one packet of a master's answer:
//
//	FF FF FF FF 66 0A { ip:4 port:2 (big-endian) }...
//
// The list of all packets ends with the address 0.0.0.0:0.
type Reply struct {
	// Servers in wire order, the terminator excluded.
	Servers []netip.AddrPort `json:"servers"`
	// End is set when the packet carries the 0.0.0.0:0 terminator: the
	// list is complete.
	End bool `json:"end"`
}

// ParseReply decodes a reply. Lenient: when the packet ends inside an entry
// it returns the entries that parsed with an error wrapping
// [ErrTruncated]; bytes after the terminator are ignored.
func ParseReply(b []byte) (Reply, error) {
	if !bytes.HasPrefix(replyHeader[:], b[:min(len(b), HeaderSize)]) || len(b) == 0 {
		return Reply{}, fmt.Errorf("%w: not a reply", ErrNotSteamMaster)
	}
	if len(b) < HeaderSize {
		return Reply{}, fmt.Errorf("reply header: %w", ErrTruncated)
	}
	var r Reply
	for rest := b[HeaderSize:]; len(rest) > 0; rest = rest[EntrySize:] {
		if len(rest) < EntrySize {
			return r, fmt.Errorf("entry %d: %d of %d bytes: %w", len(r.Servers), len(rest), EntrySize, ErrTruncated)
		}
		ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte(rest[:4])), binary.BigEndian.Uint16(rest[4:6]))
		if ap == FirstSeed() {
			r.End = true
			break
		}
		r.Servers = append(r.Servers, ap)
	}
	return r, nil
}

// Next returns the seed for the next query: the last address of this
// reply. ok is false when the reply ends the list or holds no address.
func (r Reply) Next() (seed netip.AddrPort, ok bool) {
	if r.End || len(r.Servers) == 0 {
		return netip.AddrPort{}, false
	}
	return r.Servers[len(r.Servers)-1], true
}

// AppendBinary appends the reply. Servers must be IPv4 (IPv4-mapped IPv6
// is unmapped) and none may be 0.0.0.0:0, which would end the list early.
func (r Reply) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, replyHeader[:]...)
	for _, s := range r.Servers {
		a := s.Addr().Unmap()
		if !a.Is4() {
			return b, fmt.Errorf("%w: %v is not IPv4", ErrBadField, s)
		}
		if netip.AddrPortFrom(a, s.Port()) == FirstSeed() {
			return b, fmt.Errorf("%w: 0.0.0.0:0 is the terminator", ErrBadField)
		}
		a4 := a.As4()
		b = append(b, a4[:]...)
		b = binary.BigEndian.AppendUint16(b, s.Port())
	}
	if r.End {
		b = append(b, 0, 0, 0, 0, 0, 0)
	}
	return b, nil
}

// SplitReply cuts a whole server list into reply packets of at most
// budget bytes each (header included), the last one carrying the
// terminator. An empty list gives one packet holding only the terminator.
func SplitReply(servers []netip.AddrPort, budget int) ([]Reply, error) {
	per := (budget - HeaderSize) / EntrySize
	if per < 1 {
		return nil, fmt.Errorf("%w: budget %d bytes holds no entry", ErrBadField, budget)
	}
	var out []Reply
	for len(servers) > 0 {
		n := min(per, len(servers))
		out = append(out, Reply{Servers: servers[:n:n]})
		servers = servers[n:]
	}
	// The terminator takes an entry's room; it goes in the last packet if
	// it fits, else in a packet of its own.
	if len(out) > 0 && len(out[len(out)-1].Servers) < per {
		out[len(out)-1].End = true
	} else {
		out = append(out, Reply{End: true})
	}
	return out, nil
}

// Filter builds a filter string. Zero fields are left out; Raw is appended
// as is. Values may not contain '\' or NUL.
type Filter struct {
	AppID     uint32 // \appid\N
	NotAppID  uint32 // \napp\N: servers NOT running app N
	GameDir   string // \gamedir\cstrike
	Map       string // \map\de_dust2
	Dedicated bool   // \dedicated\1 (documented earlier as \type\d)
	Secure    bool   // \secure\1: VAC-secured
	Linux     bool   // \linux\1
	Password  bool   // \password\0: servers without a password
	NotEmpty  bool   // \empty\1: servers that are not empty
	NotFull   bool   // \full\1: servers that are not full
	Proxy     bool   // \proxy\1: spectator proxies
	NoPlayers bool   // \noplayers\1: empty servers
	White     bool   // \white\1: whitelisted servers
	GameType  []string
	Raw       string // appended verbatim, e.g. `\nor\1\map\de_dust`
}

// Encode returns the filter string, or an error wrapping [ErrBadField] if
// a value contains '\' or NUL.
func (f Filter) Encode() (string, error) {
	var sb strings.Builder
	add := func(k, v string) error {
		if strings.ContainsAny(v, "\\\x00") {
			return fmt.Errorf("%w: filter %s value %q contains '\\' or NUL", ErrBadField, k, v)
		}
		sb.WriteString("\\" + k + "\\" + v)
		return nil
	}
	var err error
	flag := func(on bool, k, v string) {
		if on && err == nil {
			err = add(k, v)
		}
	}
	flag(f.AppID != 0, "appid", strconv.FormatUint(uint64(f.AppID), 10))
	flag(f.NotAppID != 0, "napp", strconv.FormatUint(uint64(f.NotAppID), 10))
	flag(f.GameDir != "", "gamedir", f.GameDir)
	flag(f.Map != "", "map", f.Map)
	flag(f.Dedicated, "dedicated", "1")
	flag(f.Secure, "secure", "1")
	flag(f.Linux, "linux", "1")
	flag(f.Password, "password", "0")
	flag(f.NotEmpty, "empty", "1")
	flag(f.NotFull, "full", "1")
	flag(f.Proxy, "proxy", "1")
	flag(f.NoPlayers, "noplayers", "1")
	flag(f.White, "white", "1")
	flag(len(f.GameType) > 0, "gametype", strings.Join(f.GameType, ","))
	if err != nil {
		return "", err
	}
	if strings.IndexByte(f.Raw, 0) >= 0 {
		return "", fmt.Errorf("%w: raw filter contains NUL", ErrBadField)
	}
	sb.WriteString(f.Raw)
	return sb.String(), nil
}
