package master

import (
	"fmt"
	"sync/atomic"

	"github.com/scout-discovery/scout/protocol/q4"
)

// Kind is the kind of a datagram, in or out: a fixed set of metrics
// labels.
type Kind uint8

const (
	KindGarbage Kind = iota // no connectionless prefix
	KindUnknown             // a prefix, but no command this master knows
	// Quake III family, in.
	KindHeartbeat
	KindInfoResponse
	KindStatusResponse
	KindChallengeResponse
	KindGetServers
	KindGetServersExt
	KindRegister
	KindGetMOTD
	KindOtherQ3 // a known command a master does not serve (getinfo, print, ...)
	// Quake III family, out.
	KindGetInfo
	KindGetStatus
	KindGetChallenge
	KindServersResponse
	KindServersExtResponse
	KindMOTD
	// Doom 3 / Quake 4.
	KindQ4Heartbeat
	KindQ4InfoResponse
	KindQ4GetServers
	KindQ4GameAuth
	KindQ4Other
	KindQ4GetInfo
	KindQ4Servers
	KindQ4AuthKey
	// Scout's landmark extension, out (landmarks.go, mesh.go).
	KindLandmarksResponse
	KindLandmarkPeersResponse
	KindLandmarkPing
	// Aggregation, out: list queries to upstream masters
	// (handler_upstream.go).
	KindUpstreamQuery
	KindUpstreamQ4Query
	// Scout's cookie extension, out (cookie.go).
	KindCookie

	numKinds
)

var kindNames = [numKinds]string{
	KindGarbage:               "garbage",
	KindUnknown:               "unknown",
	KindHeartbeat:             "heartbeat",
	KindInfoResponse:          "infoResponse",
	KindStatusResponse:        "statusResponse",
	KindChallengeResponse:     "challengeResponse",
	KindGetServers:            "getservers",
	KindGetServersExt:         "getserversExt",
	KindRegister:              "register",
	KindGetMOTD:               "getmotd",
	KindOtherQ3:               "other_q3",
	KindGetInfo:               "getinfo",
	KindGetStatus:             "getstatus",
	KindGetChallenge:          "getchallenge",
	KindServersResponse:       "getserversResponse",
	KindServersExtResponse:    "getserversExtResponse",
	KindMOTD:                  "motd",
	KindQ4Heartbeat:           "q4_heartbeat",
	KindQ4InfoResponse:        "q4_infoResponse",
	KindQ4GetServers:          "q4_getServers",
	KindQ4GameAuth:            "q4_gameAuth",
	KindQ4Other:               "q4_other",
	KindQ4GetInfo:             "q4_getInfo",
	KindQ4Servers:             "q4_servers",
	KindQ4AuthKey:             "q4_authKey",
	KindLandmarksResponse:     "getserversLandmarksResponse",
	KindLandmarkPeersResponse: "getserversLandmarkPeersResponse",
	KindLandmarkPing:          "landmarkping",
	KindUpstreamQuery:         "upstream_getservers",
	KindUpstreamQ4Query:       "upstream_q4_getServers",
	KindCookie:                "cookie",
}

// String returns the kind's metrics label.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Kinds returns every kind, for metrics.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

func kindOfQ3(word string, known bool) Kind {
	if !known {
		return KindUnknown
	}
	switch word {
	case "heartbeat":
		return KindHeartbeat
	case "infoResponse":
		return KindInfoResponse
	case "statusResponse":
		return KindStatusResponse
	case "challengeResponse":
		return KindChallengeResponse
	case "getservers":
		return KindGetServers
	case "getserversExt":
		return KindGetServersExt
	case "register":
		return KindRegister
	case "getmotd":
		return KindGetMOTD
	}
	return KindOtherQ3
}

func kindOfQ4(m q4.Message) Kind {
	switch m.(type) {
	case nil:
		return KindUnknown
	case *q4.Heartbeat:
		return KindQ4Heartbeat
	case *q4.InfoResponse:
		return KindQ4InfoResponse
	case *q4.GetServers:
		return KindQ4GetServers
	case *q4.GameAuth:
		return KindQ4GameAuth
	}
	return KindQ4Other
}

// Stats are the handler's counters, safe for concurrent use. Every
// datagram in is counted by kind; every one that produced nothing is
// counted once in Dropped by reason.
type Stats struct {
	in            [numKinds]atomic.Uint64
	out           [numKinds]atomic.Uint64
	outBytes      [numKinds]atomic.Uint64
	inBytes       atomic.Uint64
	dropped       [numReasons]atomic.Uint64
	removed       [numReasons]atomic.Uint64
	changes       [4]atomic.Uint64         // by Change
	probes        [numCauses]atomic.Uint64 // checks started, by ProbeCause
	retries       [numCauses]atomic.Uint64 // checks' retries, by ProbeCause
	answers       atomic.Uint64            // queries answered
	unknownGame   atomic.Uint64            // queries for no known game, answered empty
	denied        atomic.Uint64            // bytes the budget refused
	deferred      atomic.Uint64            // list replies left to Encode (encode.go)
	paced         atomic.Uint64            // replies paced (Pace)
	cookies       atomic.Uint64            // cookies given (cookie.go)
	cookieAnswers atomic.Uint64            // lists sent to an address that echoed its cookie
	badCookies    atomic.Uint64            // echoed cookies that did not check (answered as without one)
}

// Paced returns the replies sent paced (larger than a budget's burst).
func (s *Stats) Paced() uint64 { return s.paced.Load() }

// Cookies returns the cookies given, the lists sent on an echoed cookie,
// and the echoed cookies that did not check (cookie.go).
func (s *Stats) Cookies() (given, answered, bad uint64) {
	return s.cookies.Load(), s.cookieAnswers.Load(), s.badCookies.Load()
}

// In returns the datagrams received of kind k.
func (s *Stats) In(k Kind) uint64 { return s.in[k].Load() }

// Out returns the datagrams sent of kind k, and their bytes.
func (s *Stats) Out(k Kind) (packets, bytes uint64) { return s.out[k].Load(), s.outBytes[k].Load() }

// InBytes returns the bytes received.
func (s *Stats) InBytes() uint64 { return s.inBytes.Load() }

// Dropped returns the datagrams dropped for reason r.
func (s *Stats) Dropped(r Reason) uint64 { return s.dropped[r].Load() }

// DroppedTotal returns every dropped datagram.
func (s *Stats) DroppedTotal() uint64 {
	var n uint64
	for i := range s.dropped {
		n += s.dropped[i].Load()
	}
	return n
}

// Removed returns the servers removed for reason r.
func (s *Stats) Removed(r Reason) uint64 { return s.removed[r].Load() }

// Changes returns the verified replies that made change c.
func (s *Stats) Changes(c Change) uint64 {
	if int(c) >= len(s.changes) {
		return 0
	}
	return s.changes[c].Load()
}

// Probes returns the checks started (first tries) for cause c.
func (s *Stats) Probes(c ProbeCause) uint64 {
	if int(c) >= len(s.probes) {
		return 0
	}
	return s.probes[c].Load()
}

// Retries returns the retries of checks for cause c (tries after the
// first; see Config.VerifyRetries).
func (s *Stats) Retries(c ProbeCause) uint64 {
	if int(c) >= len(s.retries) {
		return 0
	}
	return s.retries[c].Load()
}

// Answers returns the queries answered (getservers, getServers, gameAuth,
// getmotd); UnknownGame those among them for no known game (empty list).
func (s *Stats) Answers() uint64     { return s.answers.Load() }
func (s *Stats) UnknownGame() uint64 { return s.unknownGame.Load() }

// BudgetDeniedBytes returns the bytes the outbound budget refused.
func (s *Stats) BudgetDeniedBytes() uint64 { return s.denied.Load() }

// Deferred returns the list replies HandlePacket left to Handler.Encode
// (HandlerDeps.DeferEncoding).
func (s *Stats) Deferred() uint64 { return s.deferred.Load() }
