package dissect

import (
	"errors"

	"github.com/scout-discovery/scout/protocol/a2s"
)

// decodeA2S decodes a Valve Source query packet. Messages are named as
// Valve's documentation names them.
func decodeA2S(b []byte) Result {
	r := Result{Family: A2S, Message: a2sName(b)}
	m, err := a2s.Parse(b)
	r.Err = err
	switch {
	case err == nil:
		r.Msg = m
	case errors.Is(err, a2s.ErrNotA2S):
		r.Message = ""
	default:
		// a2s returns the zero message with an error, except a player
		// list cut short, which keeps the players that parsed.
		if p, ok := m.(a2s.Players); ok && len(p.Players) > 0 {
			r.Msg = p
		}
	}
	return r
}

// a2sName names an A2S packet by its header.
func a2sName(b []byte) string {
	if hasPrefix(b, 0xFE, 0xFF, 0xFF, 0xFF) {
		return "split"
	}
	if !hasPrefix(b, 0xFF, 0xFF, 0xFF, 0xFF) || len(b) < 5 {
		return ""
	}
	switch b[4] {
	case a2s.TypeInfoRequest:
		return "A2S_INFO"
	case a2s.TypeInfo:
		return "S2A_INFO_SRC"
	case a2s.TypeGoldSrcInfo:
		return "S2A_INFO_DETAILED"
	case a2s.TypeChallenge:
		return "S2C_CHALLENGE"
	case a2s.TypePlayerRequest:
		return "A2S_PLAYER"
	case a2s.TypePlayers:
		return "S2A_PLAYER"
	}
	return ""
}
