package probe

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Q3 queries Quake III family servers (Q3A, Enemy Territory, RtCW,
// OpenArena and ioquake3, DarkPlaces-protocol games) with getinfo and
// getstatus, sent together, each with its own challenge that the server
// echoes as the "challenge" key of its infoResponse or statusResponse. The
// challenge is a 64-bit random token written as [Q3ChallengeLen] (11)
// letters and digits, base 62, most significant first:
//
//	FF FF FF FF "getinfo 1ITGmfJN2wC"    ->  "infoResponse\n\...\challenge\1ITGmfJN2wC"
//	FF FF FF FF "getstatus BdjWLqlnlfU"  ->  "statusResponse\n\...\challenge\BdjWLqlnlfU\n" + players
//
// (tokens 0x0f1e2d3c4b5a6978 and 0x8796a5b4c3d2e1f0.)
//
// Letters and digits are the part of the challenge alphabet that no
// Quake III family server alters: ioquake3, OpenArena, Enemy Territory
// and RtCW tokenize the argument (splitting on bytes <= ' ', reading
// quotes and "//" comments), turn '%' into '.' and drop a value with '\',
// ';' or '"'; DarkPlaces echoes the rest of the packet as it is; colour
// codes ('^') are stripped by some browsers. Eleven is the fewest base-62
// digits that hold 64 bits (62^11 is about 2^65.5), against 16 in hex: a
// getinfo is 23 bytes, not 28, and every echo 5 bytes shorter.
//
// Servers that echo no challenge (before Quake III 1.32) are matched by
// address and reply type. The result's Info holds the infoResponse keys,
// then the statusResponse keys not already present; the challenge key is
// left out. ioquake3 rate-limits getinfo and getstatus together per
// source address (SVC_RateLimitAddress(from, 10, 1000): a burst of 10,
// then one a second), so a query costs two of that budget, plus one per
// retry.
var Q3 Dialect = q3Dialect{status: true}

// Q3Info is Q3 with getinfo alone: no player list, half the traffic. It is
// what a server browser sends to every server of a list.
var Q3Info Dialect = q3Dialect{}

// DefaultPortQ3 is the Quake III server port (Enemy Territory and RtCW
// use 27960 too).
const DefaultPortQ3 = 27960

const (
	q3Info uint8 = iota
	q3Status
)

type q3Dialect struct{ status bool }

func (q3Dialect) Name() string        { return "q3" }
func (q3Dialect) DefaultPort() uint16 { return DefaultPortQ3 }
func (d q3Dialect) begin() []step {
	if d.status {
		return []step{{kind: q3Info}, {kind: q3Status}}
	}
	return []step{{kind: q3Info}}
}
func (q3Dialect) tokenMask() uint64 { return ^uint64(0) }
func (q3Dialect) stepName(st *step) string {
	if st.kind == q3Info {
		return "getinfo"
	}
	return "getstatus"
}

// Q3ChallengeLen is the length of the challenge a Q3 query sends: the
// fewest base-62 digits that hold a 64-bit token.
const Q3ChallengeLen = 11

// q3Digits is the base-62 alphabet of challenges, in ASCII order.
const q3Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// q3Challenge formats a token as the challenge sent: Q3ChallengeLen
// base-62 digits, zero-padded.
func q3Challenge(tok uint64) string {
	var d [Q3ChallengeLen]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = q3Digits[tok%62]
		tok /= 62
	}
	return string(d[:])
}

// parseQ3Challenge reads a challenge written by q3Challenge. It reports
// false for anything else: another length, a byte outside the alphabet,
// or a value past 64 bits (62^11 > 2^64), so every token has one
// spelling.
func parseQ3Challenge(c string) (uint64, bool) {
	if len(c) != Q3ChallengeLen {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(c); i++ {
		var d uint64
		switch ch := c[i]; {
		case ch >= '0' && ch <= '9':
			d = uint64(ch - '0')
		case ch >= 'A' && ch <= 'Z':
			d = uint64(ch-'A') + 10
		case ch >= 'a' && ch <= 'z':
			d = uint64(ch-'a') + 36
		default:
			return 0, false
		}
		hi, lo := bits.Mul64(v, 62)
		sum, carry := bits.Add64(lo, d, 0)
		if hi != 0 || carry != 0 {
			return 0, false
		}
		v = sum
	}
	return v, true
}

func (q3Dialect) appendRequest(b []byte, st *step, tok uint64) ([]byte, error) {
	if st.kind == q3Info {
		return (&q3.GetInfo{Challenge: q3Challenge(tok)}).AppendBinary(b)
	}
	return (&q3.GetStatus{Challenge: q3Challenge(tok)}).AppendBinary(b)
}

func (q3Dialect) parse(b []byte) (reply, error) {
	m, err := q3.Parse(b)
	if err != nil {
		return reply{}, err
	}
	switch m := m.(type) {
	case q3.InfoResponse:
		return q3Reply(q3Info, m.Info, m), nil
	case q3.StatusResponse:
		return q3Reply(q3Status, m.Info, m), nil
	case q3.Print:
		return reply{}, fmt.Errorf("q3: server printed %q", strings.TrimSpace(m.Text))
	}
	return reply{}, fmt.Errorf("q3: %T is not a reply to getinfo or getstatus", m)
}

// q3Reply reads the token from the echoed challenge. A challenge that is
// not one scout could have sent gets token 0, which no send has, so the
// reply counts as unknown.
func q3Reply(kind uint8, info infostring.Info, m any) reply {
	c, ok := info.Get("challenge")
	if !ok {
		return reply{kind: kind, msg: m} // matched by address and kind
	}
	tok, ok := parseQ3Challenge(c)
	if !ok {
		tok = 0
	}
	return reply{token: tok, hasToken: true, kind: kind, msg: m}
}

func (q3Dialect) handle(st *step, rep reply, res *Result) ([]step, bool, error) {
	switch m := rep.msg.(type) {
	case q3.InfoResponse:
		if st.kind != q3Info {
			return nil, false, errors.New("q3: infoResponse to getstatus")
		}
		res.StatusInfo = differs(m.Info, res.Info) // a statusResponse came first
		res.Info = mergeInfo(m.Info, res.Info)
	case q3.StatusResponse:
		if st.kind != q3Status {
			return nil, false, errors.New("q3: statusResponse to getinfo")
		}
		if res.Info != nil {
			res.StatusInfo = differs(res.Info, m.Info)
		}
		res.Info = mergeInfo(res.Info, m.Info)
		res.Players = make([]Player, 0, len(m.Players))
		for _, p := range m.Players {
			res.Players = append(res.Players, Player{Name: p.Name, Score: p.Score, Ping: p.Ping})
		}
	default:
		return nil, false, fmt.Errorf("q3: unexpected %T", m)
	}
	res.Name = first(res.Info, "hostname", "sv_hostname")
	res.Map = first(res.Info, "mapname")
	res.GameType = first(res.Info, "gametype", "g_gametype")
	res.Protocol = first(res.Info, "protocol", "com_protocol")
	res.MaxPlayers, _ = strconv.Atoi(first(res.Info, "sv_maxclients"))
	if res.Players != nil {
		res.NumPlayers = len(res.Players)
	} else {
		res.NumPlayers, _ = strconv.Atoi(first(res.Info, "clients"))
	}
	return nil, true, nil
}

// differs returns the pairs of status whose key info has with another
// value (keys compared without regard to case), the challenge left out;
// nil when there are none.
func differs(info, status infostring.Info) infostring.Info {
	var out infostring.Info
	for _, p := range status {
		if strings.EqualFold(p.Key, "challenge") {
			continue
		}
		for _, q := range info {
			if strings.EqualFold(p.Key, q.Key) && p.Value != q.Value {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// mergeInfo returns a followed by the pairs of b whose keys a lacks,
// without the challenge key.
func mergeInfo(a, b infostring.Info) infostring.Info {
	out := make(infostring.Info, 0, len(a)+len(b))
	for _, in := range []infostring.Info{a, b} {
		for _, p := range in {
			if strings.EqualFold(p.Key, "challenge") {
				continue
			}
			if _, dup := out.Get(p.Key); !dup {
				out = append(out, p)
			}
		}
	}
	return out
}

// StripColours removes Quake III colour codes from a name: '^' and the
// letter or digit after it, as ioquake3's Q_IsColorString reads them
// ("^1Red" is "Red"; a '^' before anything else stays). qstat shows
// names this way.
func StripColours(s string) string {
	if !strings.Contains(s, "^") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '^' && i+1 < len(s) && isAlnum(s[i+1]) {
			i++
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
