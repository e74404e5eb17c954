package dissect

import (
	"errors"

	"github.com/scout-discovery/scout/protocol/gs4"
)

// decodeGS4 decodes a GameSpy 4 (UT3) query packet.
func decodeGS4(b []byte) Result {
	r := Result{Family: GS4, Message: gs4Name(b)}
	m, err := gs4.Parse(b)
	if err != nil {
		r.Err = err
		if errors.Is(err, gs4.ErrNotGS4) {
			r.Message = ""
		}
		return r
	}
	r.Msg = m
	switch m.(type) {
	case gs4.ChallengeRequest:
		r.Message = "challengeRequest"
	case gs4.ChallengeReply:
		r.Message = "challengeReply"
	case gs4.InfoRequest:
		r.Message = "infoRequest"
	case gs4.InfoPacket:
		r.Message = "infoReply"
	}
	return r
}

// gs4Name names a GameSpy 4 packet by its header, for packets that fail to
// parse.
func gs4Name(b []byte) string {
	switch {
	case hasPrefix(b, 0xFE, 0xFD, gs4.TypeChallenge):
		return "challengeRequest"
	case hasPrefix(b, 0xFE, 0xFD, gs4.TypeInfo):
		return "infoRequest"
	case hasPrefix(b, gs4.TypeChallenge):
		return "challengeReply"
	case hasPrefix(b, gs4.TypeInfo):
		return "infoReply"
	}
	return ""
}
