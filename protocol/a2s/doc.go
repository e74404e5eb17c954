// Package a2s speaks Valve's Source server query protocol (A2S): the
// info, player and rules queries, the S2C_CHALLENGE round trip, and split
// replies.
//
// All integers are little-endian; strings are NUL-terminated bytes.
// Every single-packet message starts FF FF FF FF and a type byte:
//
//	A2S_INFO        FF FF FF FF 54 "Source Engine Query" 00 [challenge:4]
//	S2C_CHALLENGE   FF FF FF FF 41 challenge:4
//	info reply      FF FF FF FF 49 protocol:1 name map folder game app_id:2
//	                players:1 max_players:1 bots:1 type:1 env:1 visibility:1 vac:1
//	                [ship mode:1 witnesses:1 duration:1]       (app id 2400 only)
//	                version [edf:1 [port:2] [steam_id:8] [tv_port:2 tv_name]
//	                [keywords] [game_id:8]]                   (EDF bits 80 10 40 20 01)
//	GoldSrc reply   FF FF FF FF 6D address name map folder game players:1 max:1
//	                protocol:1 type:1 env:1 visibility:1 mod:1 [mod fields] vac:1 bots:1
//	A2S_PLAYER      FF FF FF FF 55 challenge:4                (FF FF FF FF asks for one)
//	player reply    FF FF FF FF 44 count:1 {index:1 name score:4 duration:float32}...
//	A2S_RULES       FF FF FF FF 56 challenge:4                (FF FF FF FF asks for one)
//	rules reply     FF FF FF FF 45 count:2 {name value}...
//	split packet    FE FF FF FF id:4 total:1 number:1 size:2 [size:4 crc32:4] payload
//
// Servers updated since December 2020 answer an A2S_INFO without a
// challenge with S2C_CHALLENGE; the client repeats the request with the
// challenge appended. A2S_PLAYER and A2S_RULES work the same way (a
// request carrying FF FF FF FF asks for the challenge). A reply larger
// than the server's split size (1248 bytes by default; in practice a
// rules or player reply) comes as split packets whose payloads, joined in
// number order, form the FF FF FF FF reply; the id's high bit marks bzip2
// compression, which this package reports as [ErrCompressed] rather than
// decompressing.
//
// Counts in replies (players, rules) come from the wire and are never
// trusted: nothing is allocated from them, and a reply that ends before
// its count keeps what parsed and reports [ErrTruncated].
//
// The info reply from Valve's documentation (Counter-Strike: Source):
//
//	ff ff ff ff 49 02 67 61 6d 65 32 78 73 2e 63 6f   ....I.game2xs.co
//	6d 20 43 6f 75 6e 74 65 72 2d 53 74 72 69 6b 65   m Counter-Strike
//	20 53 6f 75 72 63 65 20 23 31 00 64 65 5f 64 75    Source #1.de_du
//	73 74 00 63 73 74 72 69 6b 65 00 43 6f 75 6e 74   st.cstrike.Count
//	65 72 2d 53 74 72 69 6b 65 3a 20 53 6f 75 72 63   er-Strike: Sourc
//	65 00 f0 00 05 10 04 64 6c 00 00 31 2e 30 2e 30   e......dl..1.0.0
//	2e 32 32 00                                       .22.
//
// protocol 2, app id 240, 5 of 16 players, 4 bots, dedicated, Linux,
// public, not VAC-secured, version 1.0.0.22, no Extra Data Flag.
//
// Not implemented: the GoldSrc split format (4-bit number and
// total) and pre-Orange Box split packets without the size field.
package a2s
