package world

import (
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// Reason is why a server sends heartbeats to its masters.
type Reason uint8

// When the Quake III family heartbeats (seed 001, the Q3Master notes; seed
// 000 sections II.A and III.D; ioquake3 sv_main.c): at start-up, on every
// map change, when the last player leaves, every 5 minutes, and at
// shutdown. Not when a player joins, nor when a player leaves a server that
// is not empty afterwards.
const (
	ReasonStart Reason = iota
	ReasonPeriodic
	ReasonMapChange
	ReasonEmptied
	ReasonStop
)

// HeartbeatInterval is the period of heartbeats (HEARTBEAT_MSEC in
// ioquake3 and in the Doom 3 engine).
const HeartbeatInterval = 5 * time.Minute

// ShutdownPairGap separates ioquake3's two shutdown heartbeats
// (SV_MasterShutdown sends the second "to minimize chance of drops";
// captured 1-2 ms apart, /work/shared/vectors/INDEX.md).
const ShutdownPairGap = time.Millisecond

// heartbeats returns the datagrams a server of game g sends to each master
// for reason r, in order; the second of a pair goes ShutdownPairGap after
// the first.
//
//   - Quake III Arena and OpenArena (ioquake3): "heartbeat QuakeArena-1\n";
//     at shutdown the same heartbeat twice (no flatline).
//   - Enemy Territory: "heartbeat EnemyTerritory-1\n"; at shutdown one
//     "heartbeat ETFlatline-1\n" (ET's SV_MasterShutdown sends one; its
//     second call is commented out).
//   - RtCW: "heartbeat Wolfenstein-1\n"; at shutdown one "WolfFlatline-1".
//   - Quake 4: FF FF "heartbeat" 00 at start (map load), on map change and
//     every 5 minutes (package q4); nothing when emptied or at shutdown.
//   - UT3 and Source register with GameSpy and Steam, which are not
//     emulated: no heartbeats.
func heartbeats(g Game, r Reason) [][]byte {
	var tag, flat string
	switch g {
	case Q3A, OA:
		tag, flat = q3.TagQuakeArena, q3.TagQuakeArena
	case ET:
		tag, flat = q3.TagEnemyTerritory, q3.TagETFlatline
	case RTCW:
		tag, flat = q3.TagWolfenstein, q3.TagWolfFlatline
	case Q4:
		if r == ReasonEmptied || r == ReasonStop {
			return nil
		}
		b, _ := (&q4.Heartbeat{}).AppendBinary(nil)
		return [][]byte{b}
	default:
		return nil
	}
	if r != ReasonStop {
		b, _ := q3.Heartbeat{Tag: tag}.AppendBinary(nil)
		return [][]byte{b}
	}
	b, _ := q3.Heartbeat{Tag: flat}.AppendBinary(nil)
	if g == Q3A || g == OA {
		return [][]byte{b, b}
	}
	return [][]byte{b}
}
