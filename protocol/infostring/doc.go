// Package infostring reads and writes Quake III "info strings": the ordered
// backslash-separated key/value lists that Quake III family servers put in
// infoResponse and statusResponse packets, and clients in userinfo.
//
// # Wire format
//
//	\key1\value1\key2\value2 ... \keyN\valueN
//
// A sample, from the infoResponse of an OpenArena 0.8.8 server
// (ioquake3 1.36):
//
//	5c 76 6f 69 70 5c 6f 70 75 73 5c 67 5f 6e 65 65   \voip\opus\g_nee
//	64 70 61 73 73 5c 30 5c 70 75 72 65 5c 31 5c ...   dpass\0\pure\1\...
//
// Keys and values are byte strings: they are not required to be UTF-8 (host
// names often carry Latin-1 bytes and ^N colour codes) and are kept exactly
// as they were on the wire.
//
// # Key case
//
// Keys are compared without regard to ASCII case, as the Quake III engine's
// Info_ValueForKey does (it uses Q_stricmp): Get("HostName") finds
// "\hostname\". The spelling on the wire is preserved: Parse keeps every key
// as written, Set keeps the existing key's spelling when it replaces a value,
// and encoding writes keys back exactly.
//
// # Missing versus empty
//
// Get reports whether the key was present. A key that is present with an
// empty value ("\needpass\\...") returns ("", true); an absent key returns
// ("", false). The engine's Info_ValueForKey returns "" for both, which is
// the anti-pattern this package exists to avoid.
//
// # Strict out, lenient in
//
// [Info.AppendBinary] refuses only what cannot be represented on the wire
// (an empty key, or a backslash, NUL or newline inside a key or value), so
// whatever [Parse] accepted encodes back to the same pairs. [Info.Validate]
// applies the engine's stricter rules for strings scout originates: no
// backslash, double quote, semicolon or control byte in keys or values, and
// a total length limit ([MaxInfoString] or [MaxBigInfoString]).
package infostring
