// Package q3 reads and writes the connectionless packets of the Quake III
// family: Quake III Arena, Return to Castle Wolfenstein, Wolfenstein:
// Enemy Territory, ioquake3 games such as OpenArena, and DarkPlaces games
// talking to a dpmaster-style master.
//
// Every packet is one UDP datagram that starts with [Prefix] (four 0xFF
// bytes) and a command word. [Parse] dispatches on that word once and
// returns a typed message; each message's AppendBinary writes the whole
// datagram back.
package q3
