// Package loopnat is the address translation that lets an emulated world of
// game servers carry public-looking IPv4 addresses while every packet stays
// on the loopback network (127.0.0.0/8).
//
// # Why
//
// A master lists, and a client shows, a server's public address: it is the
// server's identity everywhere, and adaptive discovery reads
// its country and network from it. The emulated servers of package world
// cannot own those addresses; each lives on its own loopback address
// (127.a.b.c, see below). loopnat sits between a program's UDP socket and
// the kernel and rewrites addresses, like a NAT in front of the whole world:
//
//	scout servers / scout master            emulated server 81.169.12.34:27960
//	   |  WriteToUDPAddrPort(b, 81.169.12.34:27960)
//	   v
//	loopnat.Conn: destination public -> loopback   (unmapped: dropped, counted)
//	   |  sendto 127.1.0.7:27960
//	   v
//	kernel, lo only  ------------------------------>  socket 127.1.0.7:27960
//	   |  recvfrom: source 127.1.0.7:27960          <--  reply
//	   v
//	loopnat.Conn: source loopback -> public
//	   |  ReadFromUDPAddrPort -> 81.169.12.34:27960
//
// Only the programs that talk *to* the world (master, client) wrap their
// socket. The emulated servers do not: they see the loopback sources of
// clients and masters (127.0.0.1:port), exactly as a real server behind no
// NAT sees its peers, and a server never needs its own public address except
// in what it sends (no Q3, Q4, UT3 or Source reply carries it). A heartbeat
// leaves the server's loopback socket; the master's wrapped socket reads it
// as coming from the server's public address, registers that, and probes the
// public address, which the wrapper turns back into loopback. The master
// therefore derives the "public" address from the UDP source exactly as the
// seed describes for NAT'ed servers (seed 000, Fig. 4).
//
// # The table
//
// A [Table] is a bijection between public and loopback address:port pairs:
// no public address and no loopback address appears twice. [New] refuses a
// loopback side outside 127.0.0.0/8, a public side inside it, and IPv6 on
// either side, so the table itself can never send a packet off the host.
//
// package world gives every distinct public IP its own loopback IP and keeps
// the port: public 81.169.12.34:27960 and :27961 become 127.1.0.7:27960 and
// :27961. Loopback addresses are spread over 127.1.0.1 upwards (127.0.0.0/16,
// where masters and clients live, is never used), so per-address limits in a
// master (servers per address) and per-source rate limits in servers
// (ioquake3's SVC_RateLimitAddress) see as many distinct addresses as on the
// Internet. This needs Linux, which routes all of 127.0.0.0/8 to lo.
//
// # The wrapper
//
// [Wrap] returns a [Conn] over any [PacketConn] (the subset of *net.UDPConn
// that the master and the probe engine use):
//
//   - WriteToUDPAddrPort translates a mapped public destination to its
//     loopback address. A loopback destination that is not a public side
//     (a client on 127.0.0.1) passes unchanged. Any other destination is
//     dropped, counted as DroppedUnmapped, and reported as written: to the
//     sender it is a packet lost on the way to a host that does not answer,
//     exactly what probing an address that is not in the world means. This
//     is what makes it structurally impossible for a wrapped socket to send
//     off the host.
//   - ReadFromUDPAddrPort translates a mapped loopback source to its public
//     address; other loopback sources pass unchanged. A datagram from a
//     source outside 127.0.0.0/8 (possible only if the socket is bound to a
//     wildcard address) is discarded and counted as DroppedForeign, so that
//     no reply is ever addressed to it.
//
// Every packet is counted by outcome ([Stats]).
//
// # Wiring it (for scout master, scout servers, scout demo)
//
// `scout-lab world --map-out FILE` writes the table of the running world once
// all its sockets are bound (with the ports actually used). A program that
// should see the world passes `--world-map FILE` and does:
//
//	table, err := loopnat.Load(path)   // JSON, see [Table.WriteTo]
//	...
//	conn = loopnat.Wrap(udpConn, table) // use conn wherever the *net.UDPConn was
//
// In one process (scout demo) the table comes from the running emulator
// (world.Emulator.Table) instead of a file.
//
// The file format, version 1:
//
//	{"version":1,"pairs":[{"public":"81.169.12.34:27960","loopback":"127.1.0.7:27960"}, ...]}
package loopnat
