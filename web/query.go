package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scout-discovery/scout/protocol/gametext"
)

// Limits of the query parameters. A request beyond any is a 400 with a
// JSON error naming the parameter.
const (
	// MaxQueryBytes bounds a request's raw query string.
	MaxQueryBytes = 2048
	// MaxValues bounds the values of one repeatable parameter (game=a&game=b).
	MaxValues = 16
	// MaxTextBytes bounds a value of game, gametype, map and q.
	MaxTextBytes = 64
	// MaxPage bounds page.
	MaxPage = 10000
	// DefaultPerPage and MaxPerPage are per_page's default and bound.
	DefaultPerPage = 100
	MaxPerPage     = 500
	// MinPeriod, MaxPeriod and DefaultPeriod bound the ranking's period.
	MinPeriod     = time.Hour
	MaxPeriod     = 168 * time.Hour
	DefaultPeriod = 24 * time.Hour
)

// Error is an API error: the JSON body {"error": Error} with Status as the
// HTTP status.
type Error struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Parameter string `json:"parameter,omitempty"`
	Message   string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

func badParam(name, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "bad_parameter", Parameter: name,
		Message: name + ": " + fmt.Sprintf(format, args...)}
}

// Sort keys of the list.
const (
	SortPlayers  = "players"
	SortName     = "name"
	SortMap      = "map"
	SortGame     = "game"
	SortCountry  = "country"
	SortGametype = "gametype"
	SortPing     = "ping"
	SortAddress  = "address"
)

var sortKeys = []string{SortPlayers, SortName, SortMap, SortGame, SortCountry, SortGametype, SortPing, SortAddress}

// ListQuery is a parsed, normalised /api/v1/servers query. Text values
// are lower-cased (every match is case-insensitive) and each list is sorted
// and without duplicates, so that two queries that select the same servers
// in the same order have the same Key.
type ListQuery struct {
	Games, Gametypes, Countries, Maps []string
	Protocols                         []int
	Empty, Full                       *bool // nil: either
	Text                              string
	Sort                              string
	Desc                              bool
	Page, PerPage                     int
	From                              string // viewer's country, upper case; "" unknown
	FromGiven                         bool   // From came from the query, not the request's address
	// AllClones lists every address of a group of clones (clones=all),
	// each with clone_of; by default a group is one entry, its primary,
	// with also_listed_as.
	AllClones bool
}

// Key returns the canonical form of q (the body cache's key; From
// included).
func (q *ListQuery) Key() string {
	var b strings.Builder
	list := func(name string, vs []string) {
		for _, v := range vs {
			b.WriteString(name)
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(v))
			b.WriteByte('&')
		}
	}
	list("game", q.Games)
	list("gametype", q.Gametypes)
	list("country", q.Countries)
	list("map", q.Maps)
	for _, p := range q.Protocols {
		fmt.Fprintf(&b, "protocol=%d&", p)
	}
	if q.Empty != nil {
		fmt.Fprintf(&b, "empty=%t&", *q.Empty)
	}
	if q.Full != nil {
		fmt.Fprintf(&b, "full=%t&", *q.Full)
	}
	if q.AllClones {
		b.WriteString("clones=all&")
	}
	fmt.Fprintf(&b, "q=%s&sort=%s&desc=%t&page=%d&per_page=%d&from=%s", url.QueryEscape(q.Text), q.Sort, q.Desc, q.Page, q.PerPage, q.From)
	return b.String()
}

// ParseListQuery parses the raw query string of /api/v1/servers. It is
// pure: the default From (the request's country) is the caller's.
func ParseListQuery(raw string) (ListQuery, *Error) {
	q := ListQuery{Sort: SortPlayers, Page: 1, PerPage: DefaultPerPage}
	known := []string{"game", "protocol", "gametype", "country", "map", "empty", "full", "q",
		"sort", "order", "page", "per_page", "from", "clones"}
	vals, err := parseRaw(raw, known...)
	if err != nil {
		return q, err
	}
	for _, name := range known {
		vs, ok := vals[name]
		if !ok || name == "order" {
			continue
		}
		switch name {
		case "game", "gametype", "map", "country", "protocol":
		default:
			if len(vs) > 1 {
				return q, badParam(name, "given %d times; want it once", len(vs))
			}
		}
		var err *Error
		switch name {
		case "game":
			q.Games, err = textList(name, vs, validToken)
		case "gametype":
			q.Gametypes, err = textList(name, vs, validText)
		case "map":
			q.Maps, err = textList(name, vs, validText)
		case "country":
			q.Countries, err = textList(name, vs, func(s string) string {
				if s == "--" || isCountry(s) {
					return ""
				}
				return "want an ISO 3166 alpha-2 code (DE) or -- for unknown"
			})
			for i := range q.Countries {
				q.Countries[i] = strings.ToUpper(q.Countries[i])
			}
		case "protocol":
			for _, v := range vs {
				n, perr := strconv.ParseInt(v, 10, 32)
				if perr != nil {
					return q, badParam(name, "%q: want a 32-bit integer", clip(v))
				}
				q.Protocols = append(q.Protocols, int(n))
			}
			slices.Sort(q.Protocols)
			q.Protocols = slices.Compact(q.Protocols)
		case "empty", "full":
			b, ok := map[string]bool{"true": true, "false": false}[vs[0]]
			if !ok {
				return q, badParam(name, "%q: want true or false", clip(vs[0]))
			}
			if name == "empty" {
				q.Empty = &b
			} else {
				q.Full = &b
			}
		case "q":
			if msg := validText(vs[0]); msg != "" {
				return q, badParam(name, "%s", msg)
			}
			q.Text = strings.ToLower(strings.TrimSpace(gametext.StripColours(vs[0])))
		case "sort":
			if !slices.Contains(sortKeys, vs[0]) {
				return q, badParam(name, "%q: want one of %s", clip(vs[0]), strings.Join(sortKeys, ", "))
			}
			q.Sort = vs[0]
		case "page":
			q.Page, err = intIn(name, vs[0], 1, MaxPage)
		case "per_page":
			q.PerPage, err = intIn(name, vs[0], 1, MaxPerPage)
		case "clones":
			switch vs[0] {
			case "all":
				q.AllClones = true
			case "group":
			default:
				return q, badParam(name, "%q: want group or all", clip(vs[0]))
			}
		case "from":
			if !isCountry(vs[0]) {
				return q, badParam(name, "%q: want an ISO 3166 alpha-2 code (AU)", clip(vs[0]))
			}
			q.From, q.FromGiven = strings.ToUpper(vs[0]), true
		}
		if err != nil {
			return q, err
		}
	}
	q.Desc = q.Sort == SortPlayers
	if o, ok := vals["order"]; ok {
		if len(o) > 1 {
			return q, badParam("order", "given %d times; want it once", len(o))
		}
		switch o[0] {
		case "asc":
			q.Desc = false
		case "desc":
			q.Desc = true
		default:
			return q, badParam("order", "%q: want asc or desc", clip(o[0]))
		}
	}
	return q, nil
}

// RankingQuery is a parsed /api/v1/ranking query.
type RankingQuery struct {
	Games         []string
	Period        time.Duration
	Page, PerPage int
}

// Key returns the canonical form of q.
func (q *RankingQuery) Key() string {
	return fmt.Sprintf("ranking?game=%s&period=%d&page=%d&per_page=%d", url.QueryEscape(strings.Join(q.Games, ",")), q.Period, q.Page, q.PerPage)
}

// ParseRankingQuery parses the raw query string of /api/v1/ranking.
func ParseRankingQuery(raw string) (RankingQuery, *Error) {
	q := RankingQuery{Period: DefaultPeriod, Page: 1, PerPage: DefaultPerPage}
	known := []string{"game", "period", "page", "per_page"}
	vals, err := parseRaw(raw, known...)
	if err != nil {
		return q, err
	}
	for _, name := range known {
		vs, ok := vals[name]
		if !ok {
			continue
		}
		if name != "game" && len(vs) > 1 {
			return q, badParam(name, "given %d times; want it once", len(vs))
		}
		switch name {
		case "game":
			q.Games, err = textList(name, vs, validToken)
		case "period":
			d, perr := time.ParseDuration(vs[0])
			if perr != nil || d < MinPeriod || d > MaxPeriod || d%time.Hour != 0 {
				return q, badParam(name, "%q: want whole hours from 1h to 168h", clip(vs[0]))
			}
			q.Period = d
		case "page":
			q.Page, err = intIn(name, vs[0], 1, MaxPage)
		case "per_page":
			q.PerPage, err = intIn(name, vs[0], 1, MaxPerPage)
		}
		if err != nil {
			return q, err
		}
	}
	return q, nil
}

// parseRaw splits a raw query string, refusing what is too long, badly
// escaped, not UTF-8, unknown, or repeated beyond MaxValues.
func parseRaw(raw string, known ...string) (map[string][]string, *Error) {
	if len(raw) > MaxQueryBytes {
		return nil, &Error{Status: http.StatusBadRequest, Code: "query_too_long",
			Message: fmt.Sprintf("the query string is %d bytes; at most %d", len(raw), MaxQueryBytes)}
	}
	vals := map[string][]string{}
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || !utf8.ValidString(name) {
			return nil, &Error{Status: http.StatusBadRequest, Code: "bad_query",
				Message: fmt.Sprintf("%q: bad escape in the query string", clip(part))}
		}
		if !slices.Contains(known, name) {
			return nil, &Error{Status: http.StatusBadRequest, Code: "unknown_parameter", Parameter: clip(name),
				Message: fmt.Sprintf("%q: unknown parameter; known: %s", clip(name), strings.Join(known, ", "))}
		}
		if !utf8.ValidString(value) {
			return nil, badParam(name, "not UTF-8")
		}
		if len(vals[name]) == MaxValues {
			return nil, badParam(name, "more than %d values", MaxValues)
		}
		vals[name] = append(vals[name], value)
	}
	return vals, nil
}

// textList lower-cases, checks, sorts and de-duplicates vs.
func textList(name string, vs []string, check func(string) string) ([]string, *Error) {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if msg := check(v); msg != "" {
			return nil, badParam(name, "%q: %s", clip(v), msg)
		}
		out = append(out, strings.ToLower(v))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func validText(s string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > MaxTextBytes:
		return fmt.Sprintf("longer than %d bytes", MaxTextBytes)
	case hasControl(s):
		return "has a control character"
	}
	return ""
}

// validToken is a game name: dpmaster's gamename rule (no whitespace).
func validToken(s string) string {
	if msg := validText(s); msg != "" {
		return msg
	}
	if strings.ContainsAny(s, " \t") {
		return "has a space"
	}
	return ""
}

func isCountry(s string) bool {
	return len(s) == 2 && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func intIn(name, v string, lo, hi int) (int, *Error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badParam(name, "%q: want an integer from %d to %d", clip(v), lo, hi)
	}
	return n, nil
}

// clip bounds a value echoed in an error message.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// hasControl reports a control byte (below space, or DEL) in s.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}
