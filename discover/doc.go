// Package discover finds game servers: it asks master servers for their
// lists and probes every server listed, starting while the lists are
// still arriving, and finds servers on the local network by broadcast.
//
// # Master queries
//
// Each family's master speaks its own request and reply ([Protocol]):
//
//	Q3     FF FF FF FF "getservers 68 empty full"            ->  FF FF FF FF "getserversResponse" { '\' a4 p2 } "\EOT\0\0\0"
//	       FF FF FF FF "getserversExt Xonotic 3 empty full"  ->  FF FF FF FF "getserversExtResponse" { '\' a4 p2 | '/' a16 p2 } ...
//	Q4     FF FF "getServers" 00 <proto> <fs_game> 00 00 00 <filter>  ->  FF FF "servers" 00 { a4 p2(LE) }   (no end marker)
//	Steam  31 FF "0.0.0.0:0" 00 <filter> 00           ->  FF FF FF FF 66 0A { a4 p2 } ... [0.0.0.0:0]
//
// A Quake III master's list is complete at a packet carrying an end
// marker (EOT, or the NUL of protocols 43 and 45), or when the master has
// been quiet for [DefaultQuiet] after its last packet: masters before
// dpmaster 2.0 mark no end, and Quake 4's never does. A Steam master
// answers one page per query; the next query carries the last address of
// the page as its seed, until a page ends with 0.0.0.0:0.
//
// A master that sends nothing within [DefaultMasterTimeout] is asked
// again, [DefaultMasterAttempts] times in all, then reported as not
// answering; one that sends only packets that do not parse is reported as
// answering garbage. Either way the other masters' lists still count.
// Packets on the master socket from any address but a master's are
// dropped and counted (Summary.Stray): a list can only come from the
// master it was asked of.
//
// # Merging and probing
//
// Lists are merged as they arrive: an address listed by several masters
// is probed once, and the masters that listed it are kept. Each new
// address is handed at once to the probe engine ([probe.Prober.Stream]),
// so the first probes leave while later packets of the list are still on
// their way, as the Enemy Territory client does.
//
// # Hostile and broken masters
//
// A master decides what a client probes, so what it sends is bounded: an
// entry that names no server (port 0, 0.0.0.0, a broadcast, multicast or
// reserved address) is dropped alone, the rest of its packet kept; one
// master's answer is cut off past [DefaultMaxServersQ3] servers,
// [DefaultMaxPackets] packets or [DefaultMaxListTime] (Config.MaxServers,
// MaxPackets, MaxListTime), with an error that names the bound; and the
// servers listed are handed to the prober no faster than admission allows
// ([DefaultAdmitBurst], then [DefaultAdmitRate] a second, and
// [AdmitPerAnswer] more for each server that answered), so a list of
// addresses that answer nothing, or an ICMP error, cannot be probed at the
// pace the master sends it. A paced prober gets them in random order
// among those listed, not the list's (a hosting network's servers,
// listed together, would reach the player's link together).
//
// A master decides where its clients send datagrams, so a master at a
// public address may not aim them at the client's own network: its
// entries at private, loopback, link-local, multicast, unspecified,
// documentation or reserved addresses, and at the master's own address,
// are counted (MasterReport.Refused, Summary.Refused) and not probed
// ([netscope.Refused]; the Quake III client ignores such lists too).
// Config.AllowLocal probes them; a master that is itself at a local
// address (a LAN or test master) may list local servers either way.
//
// # Core and shell
//
// The decisions of a run are a pure core, session (session.go, and the
// master half in collect.go): it takes the time and what arrived (a
// master's packet, a probe's result, a timer that expired) and returns
// what to do (queries to send or resend, servers to hand to the prober,
// events, whether the lists are over). It does no I/O and never reads the
// clock, so its rules are tested by calling it with made-up times and
// packets. [Discover], [Ordered] and [List] are the shells: they own the
// sockets and the clock, run the prober ([probe.Prober], itself a core and
// a shell) and call each with the events, from one goroutine. Ordered's
// probing half (drive) keeps the strategy and the admission meter in its
// own goroutine, as Discover keeps the session. [LAN] is a shell around
// the prober alone.
package discover
