// Package loadgen measures a Quake III master server (scout's or dpmaster)
// on loopback: it registers a fleet of emulated game servers with the
// master, then asks for the full server list as fast as the master answers
// and checks every answer.
//
// # Fleet
//
// A [Fleet] is N real UDP sockets, each on its own loopback address and
// port (Layout spreads them over 127.x.y.z so per-address limits are not
// what is measured), served by one goroutine through epoll. Each socket
// sends
//
//	FF FF FF FF "heartbeat QuakeArena-1" 0A
//
// to the master, answers the master's "getinfo <challenge>" with an
// infoResponse that echoes the challenge
//
//	FF FF FF FF "infoResponse" 0A \challenge\<c>\protocol\68\clients\3\sv_maxclients\16\hostname\...\mapname\q3dm17\gametype\0
//
// and answers getstatus the same way with a statusResponse. [Populate]
// heartbeats, then reads the master's list until it holds every server of
// the fleet, within a deadline.
//
// # Swarm
//
// A [Swarm] registers many more servers than a socket each allows
// (a million): its IPv4 servers each have their own 127.x.y.z
// address but share a few sockets bound to 0.0.0.0, one port each;
// heartbeats leave from each server's address by IP_PKTINFO in sendmmsg
// batches, and getinfos are read in recvmmsg batches with their
// destination address (golang.org/x/net/ipv4). Loopback has one IPv6
// address, so its IPv6 servers are a socket each on ::1. [Swarm.Register]
// heartbeats, round after round, those the master has not challenged.
//
// # Query load
//
// [Run] sends "getservers 68 empty full" from many sources (sockets on
// distinct 127.x.y.z addresses, so per-source flood protection is not what
// is measured, unless one source is asked for) either closed-loop, with K
// requests outstanding, or open-loop at a fixed rate. The reply to one
// request is the burst of getserversResponse datagrams a source receives;
// it is complete at the datagram ending with \EOT\0\0\0 that brings it to
// every server, whether the master ends every datagram with the marker
// (scout master's default, id's master) or only the last (dpmaster 2.x).
// One short of servers ends EndGrace (q3.EndGrace, 100 ms, the rule
// package discover follows too) after its last datagram if that carried a
// marker; with another request of the same source in flight, a datagram
// that would take it past every server starts the next reply. Answers to one source are told apart by
// time and count only, so an open loop should leave more than EndGrace
// between a source's requests (Sources/Rate: 320 ms at 256 sources and
// 800/s). Config.FirstMarkerEnds restores the rule that a reply ends at
// its first marker (dpmaster 2.x's layout only). Requests are matched to
// replies by source socket, in order. Packets lost are counted against the packet count of a complete
// answer; entries missing are counted exactly.
//
// The master's CPU time and memory come from /proc/<pid>/stat (utime +
// stime) and /proc/<pid>/status (VmRSS), read before and after.
package loadgen
