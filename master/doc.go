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
// Timeout (15 minutes), servers whose flatline check went unanswered, and
// servers whose last MaxMissedProbes checks all went unanswered. A
// flatline (the ET and RtCW flatline tags, or ioquake3's two shutdown
// heartbeats within one check) only triggers a check: a spoofed flatline
// cannot delist a live server, which answers the check.
//
// An unanswered check is sent again with a fresh challenge, at most
// Config.VerifyRetries times (default 2: 1 s and 3 s after the first try,
// within ChallengeLifetime), so one lost packet does not leave a new server
// unlisted until its next heartbeat. A reply to any of the check's tries
// verifies; a heartbeat costs its source at most 1+VerifyRetries getinfo
// packets.
//
// A listed server is not delisted by bad luck: when a check that is not a
// flatline's (a re-probe, a heartbeat's check) goes unanswered, tries and
// all, the server is checked again later in its re-probe period, every
// interval / MaxMissedProbes (100 s for Q3A), and dropped only when
// MaxMissedProbes checks in a row went unanswered. At 5% loss each way a
// check of three one-packet tries goes unanswered with p = (1 -
// 0.95²)³ = 9.3e-4: that was the chance per period that a live server
// was dropped (one unanswered heartbeat check dropped it), 4.6 servers of
// 5,000 per 5 minutes; now it is p³ = 8.0e-10, one server of 5,000 every
// 2.4 years. A flatline check still drops at once, ChallengeLifetime
// after the flatline. Registry.Expire has the rule and the arithmetic in
// full; TestReprobe_FivePercentLossKeepsLiveServers simulates it.
//
// # Queries
//
// Select answers getservers / getserversExt / getServers with a fair
// rotation over a snapshot built from the last one and what changed since
// (snapshot.go: a build costs the changes, not the listing). For the
// HTTP API (package web), Version counts the changes a list could show,
// Players gives each server's last player list (kept off the entry, see
// players.go for its bounds and cost), and HandlerDeps.Observer is told
// of every verified reply (history.History keeps the player counts).
//
// dpmaster 2.x's documented behaviours hold (doc/manual.txt "GAME
// PROPERTIES", doc/techinfo.txt "PROTOCOL"): an anonymous getservers for
// a protocol no game lists is for the anonymous game whose listed servers
// use it (protocol numbers are hints, not reservations; see resolve);
// protocols are any 32-bit number, negative ones too; "getservers 84 "
// with a trailing space is answered; a getserversExt without its
// mandatory game name gets nothing (ext_without_game). A gametype is one
// word in the Quake III family and may hold spaces in the Doom 3
// family's si_gameType ("Team DM"); see gametypeOf. A refusal of a whole
// class of servers (bad_gametype, bad_protocol, unknown_heartbeat, ...)
// is logged once per server and reason (MaxLoggedDrops).
//
// # Defences
//
// Challenger (HMAC-SHA256 with a rotating secret), ResponseLimiter (the
// default defence against reflection, in the manner of DNS Response Rate
// Limiting: the bytes of replies to each victim address (IPv4, IPv6 /64),
// its network (/24, /56) and its wider network (/16, /48), whatever the
// source port, each with a return lane that keeps answering a client's
// refreshes while a spoofed flood of its address or network is cut off;
// by default a flood aimed at one address gets at most 896 KiB at once
// and 48 KiB/s after, one spread over a /24 1.25 MiB and 96 KiB/s, over a
// /16 2.5 MiB and 192 KiB/s, while a burst of 20 full lists of 5,000
// servers and a refresh every 2 s are answered; a reply larger than a
// budget's burst is paced, Pace), cookies (cookie.go: scout's clients
// prove their return path and are served from a lane no spoofed request
// reaches), SourceLimiter (dpmaster's -f, --fp-throttle /
// --fp-decay-time, which limit how often a source may ask, used instead
// when an operator passes them), ByteBudget (global outbound bytes per
// second, kept under either, a quarter of its burst kept from addresses
// without a cookie), AddrMap (dpmaster's -m), and the limits in Config.
// Every decision returns a Reason with a stable metrics label.
//
// Measured (BENCHMARKS.md, "Flood defence": scout-lab load --flood 300, 5,000
// servers listed, 60 s, three runs): a flood of 300 spoofed list requests
// a second from fresh source ports of one loopback address made the master
// send that address 6.0-6.3 times the bytes of the requests (3.1-3.2
// counting IP and UDP headers; 1,260 times with no defence), and a client
// on the same address refreshing every 2 s was answered all 31 times in
// each run; a flood from 8 ports in turn: 5.5 times, 31 of 31.
//
// # Fleet
//
// Several instances may share one registry (package fleet keeps it on
// Redis). The core's part is in share.go: Registry.Apply takes a record
// another instance verified (the later verification wins, whatever the
// order records arrive in), Registry.ApplyRemoval a removal it made (unless
// this instance verified the server since), and a Share (Rendezvous:
// rendezvous hashing of the server's address over the live instances)
// says which listed servers this instance re-probes and, when they go
// silent, removes: DueProbes leaves the others' re-probes to them and looks
// again within DefaultShareRecheck in case their owner died; Expire leaves
// their silence to their owner for one more Timeout. Heartbeats are not
// shared: the instance a server heartbeats to verifies it.
//
// # Concurrency
//
// Registry, Challenger, ResponseLimiter, SourceLimiter and ByteBudget are
// safe for concurrent use; each documents what its mutex guards.
package master
