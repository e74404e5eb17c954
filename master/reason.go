package master

import "fmt"

// Reason is the outcome of every decision the master core takes: why a
// heartbeat was or was not answered, a reply accepted or rejected, a query
// answered or dropped, a server removed. Each value has a stable
// snake_case String suitable as a metrics label.
type Reason uint8

const (
	// OK: accepted.
	OK Reason = iota

	// Addresses and limits.
	ReasonBadAddress     // invalid, unspecified, multicast address or port 0
	ReasonLoopback       // loopback server and loopback not allowed, no mapping
	ReasonPrivate        // private address refused by configuration
	ReasonServerListFull // Config.MaxServers reached
	ReasonTooManyPending // Config.MaxPending challenges outstanding
	ReasonAddressFull    // Config.MaxServersPerAddress reached for the IPv4 address / IPv6 /64
	ReasonBlocked        // on the block list (Config.Blocked)

	// Heartbeats.
	ReasonUnknownHeartbeat // tag not in the catalogue
	ReasonGamePolicy       // game refused by --game-policy
	ReasonProbeOutstanding // a check is already in flight: nothing more is sent
	ReasonNotListed        // flatline from a server that is not listed: ignored

	// Replies.
	ReasonUnknownServer    // reply from an address the master never challenged
	ReasonUnsolicited      // no check in flight for that server, or not the reply asked for
	ReasonMissingChallenge // no challenge in the reply
	ReasonBadChallenge     // challenge not issued to this address
	ReasonChallengeExpired // challenge older than Config.ChallengeLifetime
	ReasonMissingProtocol  // no "protocol"
	ReasonBadProtocol      // "protocol" not a 32-bit number; Doom 3 family: a version no game uses
	ReasonNoMaxClients     // "sv_maxclients" missing or 0
	ReasonMissingClients   // "clients" missing or not a number
	ReasonBadGametype      // gametype with a control byte, or (Quake III family) a space
	ReasonMissingGamename  // no gamename and no known heartbeat tag
	ReasonBadGamename      // empty, whitespace, control byte or too long
	ReasonGamenameMismatch // gamename differs from the game its heartbeat announced

	// Queries and flood protection.
	ReasonUnknownGame     // anonymous query for a protocol no game lists and no listed anonymous server uses
	ReasonExtWithoutGame  // getserversExt without the game name it requires: dpmaster stays silent
	ReasonRateLimited     // per-source flood protection
	ReasonSourceTableFull // flood-protection table full of active sources
	ReasonBudgetExhausted // global outbound byte budget spent
	ReasonReplyTooLarge   // a single reply larger than the whole budget burst
	ReasonResponseLimited // per-victim response rate limit (ResponseLimiter)
	ReasonVictimTableFull // response-limiter table full of prefixes still owed
	ReasonReplyInProgress // a paced reply to the same port is still being sent

	// Removals.
	ReasonSilent            // not verified for Config.Timeout
	ReasonProbesUnanswered  // Config.MaxMissedProbes checks of a listed server in a row unanswered (see Registry.Expire)
	ReasonCheckUnanswered   // a flatline check (flatline tag, or two heartbeats in one check) went unanswered
	ReasonChallengeTimedOut // a new server never answered its challenge

	// Packet-level reasons, decided by the Handler before the registry.
	ReasonNotConnectionless // no 0xFFFFFFFF / 0xFFFF prefix: garbage
	ReasonMalformed         // a known command the parser refused
	ReasonUnknownCommand    // a command word the master does not know
	ReasonUnexpected        // a response, or a request a master does not serve (getinfo, servers, ...)
	ReasonNotPeer           // register from an address that is not a configured peer master
	ReasonWrongPort         // a command that belongs on the other port (getmotd, or a query on the MOTD port)

	numReasons
)

var reasonNames = [numReasons]string{
	OK:                      "ok",
	ReasonBadAddress:        "bad_address",
	ReasonLoopback:          "loopback",
	ReasonPrivate:           "private_address",
	ReasonServerListFull:    "server_list_full",
	ReasonTooManyPending:    "too_many_pending",
	ReasonAddressFull:       "address_full",
	ReasonBlocked:           "blocked",
	ReasonUnknownHeartbeat:  "unknown_heartbeat",
	ReasonGamePolicy:        "game_policy",
	ReasonProbeOutstanding:  "probe_outstanding",
	ReasonNotListed:         "not_listed",
	ReasonUnknownServer:     "unknown_server",
	ReasonUnsolicited:       "unsolicited",
	ReasonMissingChallenge:  "missing_challenge",
	ReasonBadChallenge:      "bad_challenge",
	ReasonChallengeExpired:  "challenge_expired",
	ReasonMissingProtocol:   "missing_protocol",
	ReasonBadProtocol:       "bad_protocol",
	ReasonNoMaxClients:      "no_max_clients",
	ReasonMissingClients:    "missing_clients",
	ReasonBadGametype:       "bad_gametype",
	ReasonMissingGamename:   "missing_gamename",
	ReasonBadGamename:       "bad_gamename",
	ReasonGamenameMismatch:  "gamename_mismatch",
	ReasonUnknownGame:       "unknown_game",
	ReasonExtWithoutGame:    "ext_without_game",
	ReasonRateLimited:       "rate_limited",
	ReasonSourceTableFull:   "source_table_full",
	ReasonBudgetExhausted:   "budget_exhausted",
	ReasonReplyTooLarge:     "reply_too_large",
	ReasonResponseLimited:   "response_limited",
	ReasonVictimTableFull:   "victim_table_full",
	ReasonReplyInProgress:   "reply_in_progress",
	ReasonSilent:            "silent",
	ReasonProbesUnanswered:  "probes_unanswered",
	ReasonCheckUnanswered:   "check_unanswered",
	ReasonChallengeTimedOut: "challenge_timed_out",
	ReasonNotConnectionless: "not_connectionless",
	ReasonMalformed:         "malformed",
	ReasonUnknownCommand:    "unknown_command",
	ReasonUnexpected:        "unexpected_command",
	ReasonNotPeer:           "not_peer",
	ReasonWrongPort:         "wrong_port",
}

// String returns the reason's metrics label.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Reasons returns every defined Reason, for pre-registering metrics.
func Reasons() []Reason {
	rs := make([]Reason, numReasons)
	for i := range rs {
		rs[i] = Reason(i)
	}
	return rs
}
