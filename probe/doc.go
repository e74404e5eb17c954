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
// # Pacing
//
// A Prober sends as its window allows, at a fixed Interval, in bursts, or,
// with Pace set (the default of `scout servers`), at a rate set by a
// [Pacer]: a pure controller that reads the player's access link from the
// spacing of the replies (a busy link spaces them one transmission time
// apart), fills it to the share at which the replies' queueing stays
// within a target (2 ms at the 99th percentile by default) and backs off
// on a standing queue, so that the RTTs measured are not inflated by the
// run itself. Its doc says why that signal and not the RTT itself.
//
// # ICMP errors
//
// A UDP socket shared by many targets learns nothing of ICMP errors by
// default: Linux drops them for an unconnected socket, the BSDs report
// them to connected sockets only, and Go on Windows turns off
// SIO_UDP_CONNRESET. A dead server then shows as a timeout, after every
// attempt, holding its window slot all the while.
//
// On Linux, [Wrap] sets IP_RECVERR and IPV6_RECVERR: the kernel queues
// each ICMP error that answers one of the socket's datagrams on the
// socket's error queue, with the datagram's destination, the ICMP type
// and code, the sender of the ICMP and the quoted payload. It also makes
// the next read or write on the socket fail once (ECONNREFUSED for a
// closed port), whatever that call's own destination; the engine takes
// such a failure as a sign to read the queue ([ICMPConn]), never as a
// socket error, and writes a datagram whose write failed so again (at
// most maxStaleSendRetries times; counted in StaleSendErrors).
//
// An ICMP error is weaker evidence than a reply: anyone on the path, or
// anyone who can guess the socket's port and a target, can forge one. So
// the engine believes one only for a request in flight to exactly the
// address and port it names, only for a destination unreachable (not time
// exceeded or fragmentation needed, which are transient or about the
// path), and, when the ICMP quotes the datagram (Linux quotes it whole),
// only if the quote is the start of the latest datagram of that request,
// whose token an off-path forger cannot know. A believed error ends every
// open request of the target at once with an [*UnreachableError]
// ("getinfo: unreachable: port"), with no retry, and frees their window
// slots; it is counted in Counts.Unreachable, not Silent. Every other ICMP
// error changes nothing and is counted in ICMPUnmatched. A forger can thus
// at worst make one server, to which a request is in flight, look
// unreachable to this run: what dropping the request on the path would
// do, a little sooner. Broadcast targets ignore ICMP errors (other
// servers may still answer).
//
// What it buys, on this project's 2-core machine (loopback, 64 live and 64
// dead servers interleaved, window 16, 200 ms timeout, 2 attempts):
// median 2.46 ms per run through Wrap, against 1.607 s when each dead
// server holds its slot for both timeouts (654x), all 64 dead servers
// ended by their ICMP error, from
//
//	flock /tmp/scout-bench.lock go test -run XXX -bench DeadServers -benchtime 3x -count 5 ./probe
//
// Elsewhere, and for a Conn that is not an [ICMPConn], a closed port
// still times out. TestRun_ClosedPortWithoutICMPIsTimeout pins that; the
// Linux behaviour is pinned by TestQuery_ClosedPortIsUnreachable.
package probe
