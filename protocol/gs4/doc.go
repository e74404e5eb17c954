// Package gs4 speaks the GameSpy 4 style query protocol of Unreal
// Tournament 3: a challenge round trip, then one "full status" request
// whose reply may be split over several UDP packets.
//
// All integers are big-endian. Strings are NUL-terminated bytes (UT3 sends
// Latin-1/UTF-8; they are kept as raw bytes).
//
//	challenge request  FE FD 09 <session id:4>
//	challenge reply    09 <session id:4> <decimal text> 00 [00 padding to 12 bytes]
//	info request       FE FD 00 <session id:4> [<challenge:4>] FF FF FF [01]
//	info reply packet  00 <session id:4> "splitnum" 00 <number|0x80 if last> <sections>
//
// The challenge text may start with '-'; the info request carries it as a
// uint32, negative values wrapped modulo 2^32 (UnrealAdminWiki, "UT3 query
// protocol"). The three FF bytes ask for the server key/values, the player
// table and the team table; the final 01 says the client takes a split
// reply. The challengeless form (no challenge bytes) is what older GameSpy 3
// servers accept.
//
// The sections of a reply packet, each starting with its id byte:
//
//	00 key 00 value 00 ... 00                        server key/values; empty key ends
//	01 field 00 <offset> v 00 v 00 ... 00 ... 00     player table; empty value ends a
//	02 field 00 <offset> v 00 ... 00 ... 00          column, empty field name the table
//
// A table is sent column by column: a field name ("player_", "score_",
// "ping_", "team_", "deaths_"; team fields end "_t"), a byte giving the row
// of the first value, and the values. A reply split over packets repeats
// the header in each packet; packets are numbered from 0, the last has the
// 0x80 bit set. gamedig 5.3.3 reads server key/values only from packet 0,
// qstat 2.17 reads the packets as one stream skipping each one's 16-byte
// header; scout's [Info.Split] puts the key/values in packet 0 and splits
// elsewhere only between sections or table rows, which both accept.
//
// A single-packet reply (session 0x10203040, two keys, one player, one
// team):
//
//	00 10 20 30 40 73 70 6c 69 74 6e 75 6d 00 80 00   ...0@splitnum...
//	68 6f 73 74 6e 61 6d 65 00 55 54 33 00 6d 61 78   hostname.UT3.max
//	70 6c 61 79 65 72 73 00 31 36 00 00 01 70 6c 61   players.16...pla
//	79 65 72 5f 00 00 41 6c 69 63 65 00 00 00 02 74   yer_..Alice....t
//	65 61 6d 5f 74 00 00 52 65 64 00 00 00            eam_t..Red...
//
// UT3 reports most settings under numeric keys (p1073741825 is the map);
// [UT3KeyName] and [Info.NamedRules] give the names public sources know.
//
// No UT3 server reply has been captured: the layout above is what gamedig's
// gamespy3/unrealtournament3 and qstat's gs3 parsers read, and the tests
// prove scout's encoded replies against both.
package gs4
