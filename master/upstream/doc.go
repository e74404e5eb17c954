// Package upstream is the pure core of a master's aggregation: it asks
// other masters for their lists on a jittered period, reads their answers
// within named bounds, and hands the servers they name to the master,
// which verifies each with its own challenge before listing it.
//
// Today's Quake III-family servers heartbeat to up to five masters each
// (sv_master1..5), and each master lists only the servers that reached
// it. A master with upstreams lists the union, every server still proven
// by its own challenge: an upstream says where to look, never what is
// there.
//
// # Sources
//
// A [Source] is a master asked over UDP with its own queries, one at a
// time (a getserversResponse does not say which query it answers, and
// each query's game decides how its servers are verified):
//
//	getservers 68 empty full                     Quake III 1.32 (anonymous: Quake3Arena)
//	getservers 84 empty full                     Enemy Territory (anonymous: et)
//	getserversExt Xonotic 3 empty full           a DarkPlaces game, IPv4 and IPv6
//	FF FF "getServers" 00 <proto> ...            Quake 4 / Doom 3 (no end marker)
//
// or a scout master's verified list over HTTP (a peer: [KindPeer], the
// JSON of GET /api/v1/verified), fetched by the shell and handed to
// [Aggregator.Offer]. Each source is refreshed every Interval, jittered
// by ±Jitter so that many masters started together do not ask together.
//
// # Bounds against a hostile upstream
//
// An upstream decides what this master probes, so what it sends is
// bounded as the discovery client bounds a master: per query, at most
// MaxEntries entries (duplicates included), MaxPackets packets (garbled
// ones included) and MaxListTime from the query's first send; a list
// without an end marker ends after Quiet without a packet. Per source and
// refresh at most MaxLearned distinct servers are taken; further ones are
// counted and dropped. Entries that name no server (port 0, unspecified,
// multicast, broadcast, reserved) are dropped alone, and a source at a
// public address may not aim the master at local addresses or at the
// source's own host (netscope.Refused). The servers learned reach the
// master's probes no faster than its per-tick budget, and each is verified
// (and re-verified, and dropped when silent) exactly as a server that
// heartbeats.
//
// # Health
//
// Each source keeps its last successful list, the servers it reported,
// the time its first answer took and the share of refreshes it answered
// over 24 hours and 7 days ([Health]). A source that stops answering is
// reported down; the servers it named stay listed for as long as they
// answer the master's own checks.
//
// The package does no I/O and never reads the clock: [Aggregator.Poll]
// and [Aggregator.Receive] take now. package master drives it from its
// Handler; package masterd sends, receives and fetches.
package upstream
