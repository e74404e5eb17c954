// Package probe asks game servers for their info and status over UDP and
// measures the round-trip time of each exchange.
//
// A [Prober] sends every request of a run from one UDP socket, keeps a
// bounded window of requests in flight, retries what goes unanswered and
// reports one [Result] per server. It speaks each game's query protocol
// through a [Dialect]:
//
//	dialect  requests (in order)                                   replies matched by
//	Q3       getinfo <chal>, getstatus <chal> (both at once)       the challenge echoed in the reply
//	Q4       FF FF getInfo 00 <chal:int32 LE>                      the challenge echoed in the reply
//	GS4      FE FD 09 <sid>, then FE FD 00 <sid> <chal> FF FF FF 01 the session id echoed in the reply
//	A2S      A2S_INFO (+ challenge round trip), then A2S_PLAYER    source address and reply type (no echo exists)
//
// # Matching and the round-trip time
//
// Every send carries its own unguessable token, drawn from crypto/rand:
// a retry is a new send with a new token, and the tokens of earlier sends
// stay valid until the request is answered. A late reply to the first send
// is therefore matched to the first send, and the round-trip time is
// measured from the send that was answered, never from the first send of a
// retried request (qstat's way, which turns one lost packet into a
// one-second ping). Times come from the monotonic clock: the send time is
// taken just before the write, the receive time just after the read.
//
// Source's A2S has no field a server echoes, so an A2S query keeps one
// request in flight per server and matches a reply by its source address
// and type. After a retry an A2S reply cannot be told from a reply to the
// earlier send: its round-trip time counts from the latest send, a lower
// bound.
//
// A Q3 reply that carries no challenge (servers older than Quake III 1.32)
// is matched the same way, by address and reply type: decoding is lenient
// where the protocol's history makes it so.
//
// # What is dropped and counted
//
// Replies that match no open request are dropped and counted in [Counts]:
// late (a reply to a request already answered or given up), unknown (from
// an address that is not a target, or with a token that is not ours),
// garbled (from a target but not a reply the dialect can read; the parse
// error becomes the target's error if nothing better arrives) and
// misdirected (one of our tokens from another address than the one it was
// sent to, as multi-homed servers do; reported as the target's error).
//
// # ICMP errors
//
// An unreachable server shows as a timeout. Linux reports ICMP port
// unreachable to an unconnected UDP socket only when IP_RECVERR is set
// (and then on the error queue), and Go on Windows turns off
// SIO_UDP_CONNRESET, so a socket shared by many targets cannot learn which
// one refused. TestRun_ClosedPortIsTimeout pins this behaviour.
package probe
