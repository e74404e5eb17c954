package a2s

import (
	"fmt"
	"math"
)

// NoChallenge is the challenge value a client sends in A2S_PLAYER to ask
// for a challenge.
const NoChallenge uint32 = 0xFFFFFFFF

// PlayerRequest is A2S_PLAYER: FF FF FF FF 55 <challenge:4>.
type PlayerRequest struct {
	// Challenge from the server's [Challenge]; [NoChallenge] asks for one.
	Challenge uint32 `json:"challenge"`
}

// ParsePlayerRequest decodes A2S_PLAYER. Lenient: bytes after the
// challenge are ignored.
func ParsePlayerRequest(b []byte) (PlayerRequest, error) {
	body, err := checkHeader(b, TypePlayerRequest, "an A2S_PLAYER request")
	if err != nil {
		return PlayerRequest{}, err
	}
	r := reader{b: body}
	m := PlayerRequest{Challenge: r.u32("challenge")}
	return m, r.err
}

// AppendBinary appends the request.
func (m PlayerRequest) AppendBinary(b []byte) ([]byte, error) {
	w := writer{b: b}
	w.header(TypePlayerRequest)
	w.u32(m.Challenge)
	return w.b, nil
}

// Player is one entry of an A2S_PLAYER reply.
type Player struct {
	// Index is the slot byte; Valve documents it as the player's index but
	// servers commonly send 0 for everyone.
	Index uint8  `json:"index"`
	Name  string `json:"name"`
	Score int32  `json:"score"`
	// Duration is the time connected, in seconds.
	Duration float32 `json:"duration"`
}

// Players is the A2S_PLAYER reply: FF FF FF FF 44 <count> <players>.
//
// The Ship (app id 2400) appends deaths and money for every player after
// the list; the reply itself does not say which game sent it, so those
// bytes are not decoded.
type Players struct {
	Players []Player `json:"players"`
}

// MaxPlayers is the most players a reply can list (the count is one byte).
const MaxPlayers = 255

// ParsePlayers decodes an A2S_PLAYER reply. When the packet ends before
// count players, it returns the players that parsed and an error wrapping
// [ErrTruncated]. Lenient: bytes after count players are ignored.
func ParsePlayers(b []byte) (Players, error) {
	body, err := checkHeader(b, TypePlayers, "an A2S_PLAYER reply")
	if err != nil {
		return Players{}, err
	}
	r := reader{b: body}
	count := int(r.u8("player count"))
	var m Players
	for i := 0; i < count && r.err == nil; i++ {
		p := Player{Index: r.u8("player index")}
		p.Name = r.str("player name")
		p.Score = int32(r.u32("player score"))
		p.Duration = math.Float32frombits(r.u32("player duration"))
		if r.err == nil {
			m.Players = append(m.Players, p)
		}
	}
	if r.err != nil {
		return m, fmt.Errorf("after %d of %d players: %w", len(m.Players), count, r.err)
	}
	return m, nil
}

// AppendBinary appends the reply.
func (m Players) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Players) > MaxPlayers {
		return b, fmt.Errorf("%w: %d players, limit %d", ErrBadField, len(m.Players), MaxPlayers)
	}
	w := writer{b: b}
	w.header(TypePlayers)
	w.u8(uint8(len(m.Players)))
	for _, p := range m.Players {
		w.u8(p.Index)
		w.str(p.Name, "player name")
		w.u32(uint32(p.Score))
		w.f32(p.Duration)
	}
	return w.b, w.err
}
