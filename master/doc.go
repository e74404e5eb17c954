// Package master is the decision core of scout's master server: a pure,
// I/O-free registry of game servers, the defences around it, and the
// packet handler that turns (now, source, bytes) into decisions and
// datagrams to send. It never reads the clock (every method takes now),
// never touches a socket, a file or HTTP, and holds no goroutine.
//
// Package masterd runs it (sockets, batched sending, the ticker, the state
// writer, HTTP and metrics); master/store keeps its list on disk; the
// command line in dpmaster's syntax is scout master's (cmd/scout).
//
// # Registration
//
//	server                          master
//	  heartbeat QuakeArena-1\n   ->   Registry.Heartbeat: limits, policy -> Probe
//	                             <-   getinfo <challenge>
//	  infoResponse\n\...\challenge\<challenge>
//	                             ->   Registry.Verify: same address, challenge
//	                                  within ChallengeLifetime, protocol,
//	                                  sv_maxclients > 0, clients, gamename rules
//	                                  -> listed (Change)
//
// A heartbeat never extends a listing; only a verified reply does
// (dpmaster's rule: "authenticated infoResponse messages are the only
// messages we can reasonably trust"). The address listed is the packet's
// source, so servers behind NAT are listed with their public address.
//
// Keeping the list true: DueProbes returns the periodic re-probes of each
// game (Q3A: getstatus every 5 minutes; ET: getchallenge+getstatus+getinfo
// every 4 minutes, per CAIA 070730A); Expire drops servers silent for
// Timeout (15 minutes), servers that missed MaxMissedProbes re-probes, and
// servers whose heartbeat- or flatline-triggered check went unanswered. A
// flatline (or ioquake3's double shutdown heartbeat) only triggers a check:
// a spoofed flatline cannot delist a live server, which answers the check.
//
// An unanswered check is sent again with a fresh challenge, at most
// Config.VerifyRetries times (default 2: 1 s and 3 s after the first try,
// within ChallengeLifetime), so one lost packet neither leaves a new server
// unlisted until its next heartbeat nor drops a listed one. A reply to any
// of the check's tries verifies; a heartbeat costs its source at most
// 1+VerifyRetries getinfo packets.
//
// # Queries
//
// Select answers getservers / getserversExt / getServers with a fair
// rotation over a snapshot rebuilt only after the listing changes.
//
// # Defences
//
// Challenger (HMAC-SHA256 with a rotating secret), ResponseLimiter (the
// default defence against reflection, in the manner of DNS Response Rate
// Limiting: the bytes of replies per victim IPv4 address or IPv6 /64,
// whatever the source port, with a return lane that keeps answering a
// client's refreshes while a spoofed flood of its address is cut off; by
// default a flood aimed at one victim gets at most 896 KiB at once and
// 48 KiB/s after, while a burst of 20 full lists of 5,000 servers and a
// refresh every 2 s are answered), SourceLimiter (dpmaster's -f,
// --fp-throttle / --fp-decay-time, which limit how often a source may ask,
// used instead when an operator passes them), ByteBudget (global outbound
// bytes per second, kept under either), AddrMap (dpmaster's -m), and the
// limits in Config. Every decision returns a Reason with a stable metrics
// label.
//
// # Concurrency
//
// Registry, Challenger, ResponseLimiter, SourceLimiter and ByteBudget are
// safe for concurrent use; each documents what its mutex guards.
package master
