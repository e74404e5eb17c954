// Package world describes and runs emulated game servers: a world of
// thousands of Quake III Arena, Enemy Territory, RtCW, OpenArena, Quake 4,
// UT3 and Counter-Strike: Source servers in one process on loopback, each
// with a public-looking address, its own loopback address, its players,
// and a network link (delay, jitter, loss) as seen from one client's place.
// It is what scout's discovery engine and benchmarks run against
// (`scout-lab world`), since the Internet cannot be used in tests.
//
// # The model
//
// A [World] is a list of [Server]s. A server's Public address is its
// identity everywhere (master lists, client output, geolocation); its
// Loopback address is where its socket lives. Package loopnat translates
// between the two for the programs that talk to the world; see its package
// doc for the whole address-translation design. Every server also has a
// [Link]: RTT added to each reply, jitter (uniform, only lengthening) and
// loss (per reply datagram); heartbeats travel one way (RTT/2) and are
// never lost. Country and ASN are optional and left for worlds built from
// real data.
//
// # The world file, version 1
//
// JSON, as [World.Write] writes it and [Read] reads it (unknown fields are
// refused, limits in the constants of this package):
//
//	{
//	 "version": 1,
//	 "seed": 7,
//	 "servers": [
//	  {
//	   "public": "81.169.12.34:27960",
//	   "loopback": "127.1.0.1:27960",
//	   "game": "oa",                      q3a et rtcw oa q4 ut3 css
//	   "protocol": 71,                    optional: 0 is the game's usual one
//	   "hostname": "Frag OpenArena #3",
//	   "map": "oa_dm1",
//	   "gametype": "0",
//	   "max_clients": 12,
//	   "players": [{"name": "Sarge0", "score": 4, "ping": 0, "bot": true}],
//	   "link": {"rtt": "120ms", "jitter": "0s", "loss": 0.01},
//	   "country": "DE", "asn": 24940     optional
//	  }
//	 ]
//	}
//
// [Generate] builds a world from a [Spec] (server count, game mix, shares
// of full and empty servers, RTT range, jitter, loss), deterministically
// for a seed. Public addresses come in hosting networks: /24s drawn from
// public unicast space (never a special-purpose range, see [IsPublic]),
// up to MaxHostsPerNetwork hosts each, up to MaxServersPerHost servers per
// host on consecutive ports from the game's usual port. Each public host
// gets its own loopback address from 127.1.0.1 upwards, port kept.
//
// # The emulator
//
// [Listen] gives the servers their sockets (SocketMode): one UDP socket per
// server, raising RLIMIT_NOFILE, when the limit allows; otherwise one socket
// per distinct port, bound to the wildcard address on lo only
// (SO_BINDTODEVICE), with IP_PKTINFO telling which server a datagram is for
// and setting the source of its replies. A generated world of 50,000
// servers runs on 16 sockets in 170 MB (measured; this machine's hard limit
// is 20,000 descriptors and CAP_SYS_RESOURCE is not granted).
// [Emulator.Run] serves them with a fixed number of goroutines, whatever
// the size of the world:
//
//   - the reader: one epoll set over all sockets; every datagram is
//     timestamped by the kernel (SO_TIMESTAMPNS) and handed to a pure responder
//     (respond(now, server, limiter, from, packet) -> replies, outcome);
//     each reply datagram then goes through the server's link (lost, or
//     due at receive time + RTT + jitter) into the release queue;
//   - the releaser: one goroutine that pops the queue (a heap by due time)
//     and sends each datagram when due, sleeping in the kernel in slices of
//     at most SleepSlice (WaitMode; Go timers wake up to a millisecond
//     late). It records how late each datagram left (Stats.Lateness*);
//   - the clock: heartbeats (start-up, paced at HeartbeatRate; every
//     HeartbeatInterval; on map change and when the last player leaves; at
//     shutdown, see heartbeats) and optional dynamics.
//
// # The client's access link
//
// A server's Link is the path across the Internet; Config.Access is the
// player's own line, shared by everything the player exchanges
// ([AccessLink]). Each client (one address and port) gets a [Bottleneck]
// per direction: a FIFO of a fixed rate in bits per second (IP bytes: the
// payload plus WireOverhead) with a tail-drop queue bounded in bytes or
// in the time it takes to drain. Downstream, a reply reaches the link at
// its due time (query received + RTT + jitter) and leaves it when its last
// bit has crossed: the releaser queues it again for that time, or drops it
// when the queue is full. Upstream (UpRate), a query reaches its server
// when it has crossed the link, and its reply's delay counts from then.
// The model takes the due time, not the clock, so the releaser's lateness
// does not move it; it is tested with time passed in
// (TestBottleneck_QueueAndTailDrop) and under testing/synctest
// (TestReleaser_AccessLink). Probing faster than the line carries the
// replies thus shows as queueing delay in every RTT measured, then as
// loss, as on a real DSL or cable line.
//
// The responder answers exactly what the real servers answer, and nothing
// else: Quake III family getinfo, getstatus and getchallenge (ioquake3's
// game-name check for OpenArena); Quake 4 getInfo; UT3's challenge and
// full-status request (no reply without a valid challenge; a large reply
// split); Source A2S_INFO and A2S_PLAYER with the S2C_CHALLENGE round trip
// (split at 1248 bytes). Garbage, responses, heartbeats and unknown commands
// are ignored and counted. Every query passes ioquake3's rate limits first
// (10 per second per source address after a burst of 10; 10 per 100 ms per
// server), see SourceBurst.
//
// # Delay accuracy
//
// A reply's delay counts from the kernel's receive timestamp of the query,
// so the reader's own scheduling does not lengthen it. What remains is how
// late the releaser hands the reply to the kernel. Measured by
// BenchmarkEmulator_DelayAccuracy (1,500 probes at 1,000/s, RTTs 10-400 ms,
// client timing with kernel timestamps too; `go test -run '^$' -bench
// DelayAccuracy -benchtime 1x -count 5 ./lab/world`) on the shared 2-core
// machine at load average 4-5: RTT error (measured minus injected) p50
// 25-40 us, p99 40-80 us in most runs; in about one run in five, p99 of 1-5
// ms, when the process is held up as a whole. At load average 11-12 (three
// runs, 2026-11-25): p50 38-43 us, p99 130-790 us. TestEmulator_DelayAccuracy
// checks only what holds under any load: every probe answered, none before
// its injected RTT. That needs the settings `scout-lab world` uses:
// Config.RealTime (the reader and releaser threads SCHED_FIFO, which needs
// root; without it p99 is several ms on a loaded machine) and TuneRuntime
// (GOMAXPROCS 8, GC percent 800). A client that timestamps its replies when
// it reads them, rather than with SO_TIMESTAMPNS, adds its own scheduling
// delay: p99 0.2-0.4 ms in the same test.
//
// Nothing leaves loopback: sockets bind only loopback addresses, masters
// must be loopback, and the sender refuses any destination that is not.
package world
