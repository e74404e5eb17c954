// Package capture turns packets written down in files into UDP payloads
// with their metadata, for scout decode. It reads:
//
//   - pcap (libpcap) files, either byte order, microsecond (magic
//     0xa1b2c3d4) or nanosecond (0xa1b23c4d) timestamps;
//   - pcapng files: section header blocks in either byte order (several
//     sections allowed), interface description blocks with their link type,
//     if_tsresol and if_tsoffset, enhanced, simple and obsolete packet
//     blocks; other blocks are skipped and counted;
//   - offset dumps: xxd ("00000000: ffff ffff 696e 666f  ....info"),
//     Wireshark, tshark -x and hexdump -C ("0000  ff ff ff ff 69 6e  ....in"),
//     and the hex-and-ASCII figures of papers, elisions included;
//   - plain hex (blank lines separate packets) and raw binary.
//
// # Frames
//
// Capture files name the link layer of their frames. UDP strips Ethernet
// (with 802.1Q/802.1ad VLAN tags), Linux cooked captures (SLL, SLL2), BSD
// and OpenBSD loopback and raw IP, then IPv4 (with options) or IPv6 (with
// hop-by-hop, routing, destination-options, fragment and AH extension
// headers), then UDP. Text and raw inputs do not name one, so a packet is
// taken as a frame when it looks like one: EtherType 0x0800, 0x86DD or a VLAN
// tag at bytes 12-13 in front of a sane IP header, or a sane IP header at
// byte 0 (an IPv4 header must have a right or zero checksum, so a game
// payload is never taken for one). Otherwise it is the UDP payload itself.
//
// Frames that carry no UDP datagram are skipped and counted in Stats: not
// UDP, IP fragments, malformed or cut inside a header, unknown link types.
// IP fragments are not reassembled. A first fragment (offset 0, more
// fragments set) holds the whole UDP header, so it is returned with what it
// holds of the payload, marked Fragment and incomplete; later fragments are
// skipped.
//
// # Incomplete packets
//
// A packet may hold less than its headers declare: a capture's snap length
// cut it, it is a first fragment, or a dump elided lines. The packet keeps
// every byte present and says what is missing: Payload is the head, Length
// the declared payload length, Rest the pieces after a gap, each at its
// offset in the UDP payload, and Gaps the missing ranges. Pieces are never
// glued together. Figure 7 of the seed report, for example,
//
//	0000  00 16 e6 8c 0b 3a 00 12 bf 12 ab 7a 08 00 45 30  ....:.....z..E0
//	...
//	0050  64 6d 55 ec 64 3c 2c 6e 45 1c dc 03 64 6d 90 8c  dmU.d<,nE...dm..
//	[...lines elided for clarity...]
//	0560  c8 6d c3 7a 87 48 64 6d 55 15 25 13 ca 6d 08 09  .m.z.HdmU.%..m..
//	...
//	0590  64 6d c3 0d 3e 3a 08 6b c3 0d 3e 3a 48 71      dm..>:.k..>:Hq
//
// is an Ethernet frame whose IPv4 and UDP headers declare a 1396-byte
// payload; it yields a 54-byte Payload, one 62-byte piece at payload
// offset 1334 and the gap [54, 1334).
//
// # Offset dumps
//
// A dump line is an offset of 4 to 8 hex digits, a colon or two spaces,
// byte groups (an even number of hex digits each) separated by single
// spaces, and then an ASCII column after two or more spaces. The ASCII
// column is never read as bytes, however hex-like it is ("..(8m8m..#G" or
// ".\game"): the bytes end at the first wider gap, and the byte count of
// every line is checked against the offset of the next one. Lines that are
// not dump lines (prose, "[...lines elided for clarity...]") are skipped; a
// jump in the offsets after one is a gap. Offsets restarting at 0 begin a
// new packet. The '*' of hexdump -C and xxd -a (lines repeating the one
// before) is expanded.
//
// # Limits
//
// Inputs are bounded by MaxInput, records and dumps by MaxRecord, pcapng
// blocks by MaxBlock, interfaces by MaxInterfaces and the packets of one
// input by MaxPackets. Lengths read from the input are checked against
// what is present before any slicing, and nothing is allocated from them.
package capture
