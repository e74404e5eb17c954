// Package steammaster speaks Valve's legacy Steam master server query
// protocol, which lists the addresses of Source game servers.
//
// A client sends
//
//	31 <region:1> <seed "ip:port"> 00 <filter> 00
//
// and the master answers with one or more packets
//
//	FF FF FF FF 66 0A { <IPv4:4> <port:2, big-endian> }...
//
// The whole list ends with the address 0.0.0.0:0 ([Reply.End]). The first
// query seeds from "0.0.0.0:0"; each next one seeds from the last address
// of the previous reply ([Reply.Next]) to get the following batch.
// Regions are 0x00 US East to 0x07 Africa, 0xFF every region. The filter
// is a backslash-separated key/value string such as
// `\appid\240\gamedir\cstrike\secure\1` ([Filter] builds one; [Query]
// carries it raw).
//
// qstat 2.17's query for every server (`quakestat -stm`):
//
//	31 ff 30 2e 30 2e 30 2e 30 3a 30 00 00            1.0.0.0.0:0..
//
// A reply with 127.0.0.1:27015 and the terminator:
//
//	ff ff ff ff 66 0a 7f 00 00 01 69 87 00 00 00 00   ....f.....i.....
//	00 00                                             ..
package steammaster
