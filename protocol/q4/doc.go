// Package q4 reads and writes the connectionless packets of the Doom 3
// engine family (id Tech 4): Doom 3 and Quake 4 game servers, their
// clients, and their master servers.
//
// Every packet starts with FF FF (the 16-bit CONNECTIONLESS_MESSAGE_ID -1)
// and a NUL-terminated command word, compared without regard to case.
// Binary fields are little-endian; strings are NUL-terminated. A Quake III
// packet (FF FF FF FF) is not claimed: [Parse] returns [ErrNotQ4].
//
// # Discovery, seed 000 section IV
//
//	client -> master  gameAuth      CD key check           [GameAuth]
//	master -> client  authKey       accepted (GUID) / not  [AuthKey]
//	client -> master  getServers    list request           [GetServers]
//	master -> client  servers       6-byte entries, several packets  [Servers]
//	client -> server  getInfo       probe with a challenge [GetInfo]
//	server -> client  infoResponse  info, players, osmask  [InfoResponse]
//	server -> master  heartbeat     registration, every 5 min  [Heartbeat]
//
// # getInfo
//
//	FF FF "getInfo" 00 | challenge int32 LE
//
//	ff ff 67 65 74 49 6e 66 6f 00 00 00 00 00   ..getInfo.....   (qstat -q4s)
//
// # infoResponse
//
//	FF FF "infoResponse" 00 | challenge int32 LE | protocol u32 LE (major<<16|minor)
//	{ key 00 value 00 } 00 00
//	{ slot u8 | ping u16 LE | rate u32 LE | name 00 | clan 00 (Quake 4 only) }  per client
//	32 | osmask u32 LE | trailer (Quake 4: 5 bytes)
//
// The head of the real Quake 4 1.4.2 reply of seed 000, Fig. 8:
//
//	ff ff 69 6e 66 6f 52 65 73 70 6f 6e 73 65 00   ..infoResponse.
//	01 00 00 00                                    challenge 1
//	55 00 02 00                                    protocol 2.85
//	6e 65 74 5f 73 65 72 76 65 72 44 65 64 69 63   net_serverDedic
//	61 74 65 64 00 31 00 ...                       ated.1. ...
//
// and its tail:
//
//	... 67 61 6d 65 6e 61 6d 65 00                 gamename.
//	51 34 4d 50 20 31 2e 34 2e 32 00               Q4MP 1.4.2.
//	00 00                                          end of info
//	20                                             no players: terminator 32
//	07 00 00 00                                    osmask 7
//	00 00 00 00 01                                 Quake 4 trailer, meaning unknown
//
// # getServers
//
//	FF FF "getServers" 00 | protocol u32 LE (bit 31: third-party flag) | fs_game 00
//	  [player 00 | clan 00  (Quake 4)] | filter u8 (2 bits each: password, players, gametype)
//
//	ff ff 67 65 74 53 65 72 76 65 72 73 00 55 00 02 80 00 00 00 00   (Fig. 6, Quake 4 1.4.2)
//
// # servers
//
//	FF FF "servers" 00 | { a b c d | port u16 LE }*     up to 231 entries (Fig. 7)
//
//	ff ff 73 65 72 76 65 72 73 00 55 ec 65 2b 6e 6d ...   85.236.101.43:28014 ...
//
// # heartbeat
//
//	FF FF "heartbeat" 00
//
//	ff ff 68 65 61 72 74 62 65 61 74 00            ..heartbeat.
//
// # gameAuth and authKey
//
//	FF FF "gameAuth" 00 | protocol u32 LE | 1 | cdkey 00 | 0 | 00
//	FF FF "authKey" 00 | 1 (GUID) | guid 00
//	FF FF "authKey" 00 | 0 (bad key) | reason u8 | reason data
//
//	ff ff 61 75 74 68 4b 65 79 00 01 41 42 43 00   ..authKey..ABC.
//
// # Sources and what they leave open
//
// The layouts come from the Doom 3 GPL source (AsyncServer.cpp,
// AsyncClient.cpp, BitMsg.cpp), qstat's doom3.c and gamedig's doom3.js,
// checked against the Quake 4 packets printed in seed 000. Quake 4 adds a
// clan string to each player record, player and clan strings to
// getServers, bit 31 of getServers' protocol word, and five bytes after
// the infoResponse osmask whose meaning no public source gives. Unknown
// trailing bytes are kept raw in each message's Trailer and re-encoded
// exactly.
//
// # Strict out, lenient in
//
// Parsers check every length, never allocate from a count on the wire, and
// never panic: truncation wraps [ErrTruncated], impossible values
// [ErrMalformed]. They accept what the engine accepts where that is
// unambiguous (any player slot of 32 or more ends the list; a server list
// with a partial last entry keeps the whole ones). Encoders refuse what
// the engine could not read back ([ErrInvalid]): NUL inside strings,
// strings over [MaxStringLen], slots over 31, non-IPv4 servers.
package q4
