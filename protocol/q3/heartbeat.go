package q3

import (
	"fmt"
	"strings"
)

// Heartbeat tags ("protocol strings" in dpmaster's words) of the games
// this package knows. Servers send one after "heartbeat "; the master uses
// it to tell the games apart, not the protocol number.
const (
	// TagQuakeArena is sent by Quake III Arena and every ioquake3 game
	// with com_gamename Quake3Arena (OpenArena 0.8.8 on Debian, see
	// testdata/openarena_heartbeat.hex). ioquake3 has no flatline: on
	// shutdown it sends this same heartbeat twice, a millisecond or two
	// apart (testdata/openarena_shutdown_heartbeat_pair_2nd.hex).
	TagQuakeArena = "QuakeArena-1"
	// TagWolfenstein is Return to Castle Wolfenstein's heartbeat.
	TagWolfenstein = "Wolfenstein-1"
	// TagEnemyTerritory is Wolfenstein: Enemy Territory's heartbeat
	// (seed 000, Fig. 5).
	TagEnemyTerritory = "EnemyTerritory-1"
	// TagWolfFlatline is RtCW's shutdown heartbeat (Q3Master notes, seed
	// 001).
	TagWolfFlatline = "WolfFlatline-1"
	// TagETFlatline is Enemy Territory's shutdown heartbeat (seed 000,
	// section III.D).
	TagETFlatline = "ETFlatline-1"
	// TagDarkPlaces is sent by DarkPlaces games and by ioquake3 when
	// com_gamename is anything but Quake3Arena
	// (testdata/openarena_heartbeat_darkplaces.hex). Such servers put
	// their game name in the infoResponse instead.
	TagDarkPlaces = "DarkPlaces"
)

// Heartbeat is a game server's "I am here" to a master:
//
//	FF FF FF FF "heartbeat " <tag> [0A]
//
// The master answers with a getinfo, never directly.
type Heartbeat struct {
	// Tag names the game family, e.g. [TagQuakeArena]. Tags this package
	// does not know are kept as they came. One word: no whitespace.
	Tag string `json:"tag"`
	// Terminator is the line ending; TermDefault encodes a newline, as
	// every engine and dpmaster's documentation do.
	Terminator Terminator `json:"terminator,omitempty"`
}

// Flatline reports whether the tag announces a shutdown: a tag whose name
// (the part before a "-<version>" suffix) ends in "Flatline", as RtCW's
// WolfFlatline-1 and ET's ETFlatline-1 do. dpmaster treats these the same
// way (it ignores them rather than removing the server).
func (h Heartbeat) Flatline() bool {
	name := h.Tag
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		name = name[:i]
	}
	return len(name) >= len("Flatline") && strings.EqualFold(name[len(name)-len("Flatline"):], "Flatline")
}

// AppendBinary appends the heartbeat datagram.
func (h Heartbeat) AppendBinary(b []byte) ([]byte, error) {
	if err := validToken("heartbeat tag", h.Tag); err != nil {
		return b, err
	}
	out := appendHeader(b, cmdHeartbeat)
	out = append(out, ' ')
	out = append(out, h.Tag...)
	out, err := h.Terminator.resolve(TermLF).append(out)
	if err != nil {
		return b, err
	}
	return out, nil
}

func parseHeartbeat(body []byte) (Message, error) {
	l, err := splitLine(body)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	switch len(l.words) {
	case 0:
		return nil, fmt.Errorf("heartbeat: %w", l.short("tag"))
	case 1:
	default:
		// dpmaster reads only the first word; a second one means the
		// sender is not a game server.
		return nil, fmt.Errorf("heartbeat: %w: %d words after the tag", ErrMalformed, len(l.words)-1)
	}
	return l.finish("heartbeat", Heartbeat{Tag: l.words[0], Terminator: l.term})
}
