// Package q3 reads and writes the connectionless packets of the Quake III
// family: Quake III Arena, Return to Castle Wolfenstein, Wolfenstein:
// Enemy Territory, ioquake3 games such as OpenArena, and DarkPlaces games
// talking to a dpmaster-style master.
//
// Every packet is one UDP datagram: [Prefix] (four 0xFF bytes), a command
// word, and the command's arguments. There is no length field and no
// sequence number; the datagram's end is the message's end. [Parse]
// dispatches once on the command word and returns a typed message; each
// message's AppendBinary writes the whole datagram, prefix included.
// [Command] names the word without parsing the rest.
//
// # Messages
//
// Layouts, with a wire sample for each (samples marked "captured" are
// in testdata; see testdata/README.md for where each came from):
//
//	Heartbeat          FF FF FF FF "heartbeat " tag [0A]
//	  captured (OpenArena 0.8.8):
//	  ff ff ff ff 68 65 61 72 74 62 65 61 74 20 51 75   ....heartbeat Qu
//	  61 6b 65 41 72 65 6e 61 2d 31 0a                  akeArena-1.
//
//	GetServers         FF FF FF FF "getservers" [" " gamename] " " protocol {" " option} [0A]
//	                   FF FF FF FF "getserversExt" [" " gamename] " " protocol {" " option} [0A]
//	  captured (qstat 2.17 -q3m):   "getservers 68 empty full\n"
//	  captured (qstat 2.17 -woetm): "getservers 84 empty full"
//	  dpmaster:                     "getserversExt Quake3Arena 68 ipv4 empty ipv6"
//
//	ServersResponse    FF FF FF FF "getserversResponse" {5C a4 p2} [end]
//	                   FF FF FF FF "getserversExtResponse" {5C a4 p2 | 2F a16 p2} [end]
//	  end: 5C "EOT" 00 00 00 | 5C 00 | 5C "EOT"
//	  (127.0.0.1:28960 then EOT, accepted by qstat 2.17):
//	  ff ff ff ff 67 65 74 73 65 72 76 65 72 73 52 65   ....getserversRe
//	  73 70 6f 6e 73 65 5c 7f 00 00 01 71 20 5c 45 4f   sponse\....q \EO
//	  54 00 00 00                                       T...
//
//	GetInfo            FF FF FF FF "getinfo" [" " challenge] [0A | 00]
//	  captured (qstat 2.17): "getinfo\n"; ioquake3: "getinfo xxx"
//
//	InfoResponse       FF FF FF FF "infoResponse" 0A infostring [0A | 00]
//	  captured (Q3A/CPMA server, seed 000 Fig. 3):
//	  ff ff ff ff 69 6e 66 6f 52 65 73 70 6f 6e 73 65   ....infoResponse
//	  0a 5c 67 61 6d 65 5c 63 70 6d 61 5c 70 75 6e 6b   .\game\cpma\punk
//	  ...  5c 63 68 61 6c 6c 65 6e 67 65 5c 78 78 78    \challenge\xxx
//
//	GetStatus          FF FF FF FF "getstatus" [" " challenge] [0A | 00]
//	  captured (gamedig 5.3.3): "getstatus\x00"
//
//	StatusResponse     FF FF FF FF "statusResponse" 0A infostring 0A {score " " ping {" " n} " " 22 name 22 0A}
//	  captured (OpenArena 0.8.8, three bots), the end of it:
//	  ... 30 0a 30 20 30 20 22 53 61 72 67 65 22 0a 30 20   0.0 0 "Sarge".0
//	  30 20 22 47 72 69 73 6d 22 0a 30 20 30 20 22 4b      0 "Grism".0 0 "K
//	  79 6f 6e 73 68 69 22 0a                            yonshi".
//
//	GetChallenge       FF FF FF FF "getchallenge" [" " n [" " gamename]] [0A | 00]
//	  ioquake3: "getchallenge 477913120 Quake3Arena"
//
//	ChallengeResponse  FF FF FF FF "challengeResponse " challenge [" " client " " protocol]
//	  captured (OpenArena 0.8.8): "challengeResponse 1626205626 477913120 71"
//
//	DPChallenge        FF FF FF FF "challenge " challenge [00 trailer]
//	  DarkPlaces: "challenge <c>\x00" followed by its crypto negotiation
//
//	Print              FF FF FF FF "print" 0A text
//	  captured (OpenArena 0.8.8): "print\nGame mismatch: This is a Quake3Arena server\n"
//
//	GetMOTD            FF FF FF FF "getmotd " 22 infostring 22 [0A]
//	MOTD               FF FF FF FF "motd " 22 infostring 22 [0A]
//	  ET 2.60 (seed 000): `getmotd "\challenge\29862\renderer\...\version\ET 2.60 ..."` 0A
//
//	Register           FF FF FF FF "register" a4 p2
//	  Q3Master (seed 001): "register" c0 00 02 07 6d 38  (192.0.2.7:27960)
//
// a4 and a16 are IPv4 and IPv6 addresses, p2 a big-endian port. Info
// strings are read and written by scout's infostring package.
//
// # Decoding is lenient, encoding strict
//
// Parse accepts what the engines accept: command words in any case
// (ioquake3 compares them with Q_stricmp), runs of whitespace between
// words, an optional newline or NUL after a one-line command (recorded in
// a Terminator field so the message encodes back to the same bytes), an
// info string without its leading backslash, challenges of any length and
// content. AppendBinary refuses what the engines would refuse or could
// not read back: challenges outside [ValidateChallenge], tokens with
// whitespace, names with quotes, port 0 and unspecified addresses; every
// refusal wraps [ErrInvalid].
//
// # Errors and partial messages
//
// Parse errors wrap exactly one of [ErrNotQ3], [ErrUnknownCommand],
// [ErrTruncated] and [ErrMalformed]. Because these are text packets, a
// prefix of a valid packet can itself be valid ("getservers 7" is a
// prefix of "getservers 71"); every other prefix fails with
// [ErrTruncated]. A server list, info string or player list damaged
// part-way is returned with what was read before the defect, together
// with the error.
package q3
