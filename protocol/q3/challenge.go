package q3

import (
	"bytes"
	"fmt"
	"strconv"
)

// GetChallenge asks a game server for a connection challenge:
//
//	FF FF FF FF "getchallenge" [" " <client challenge> [" " <gamename>]] [0A | 00]
//
// ioquake3 1.36 sends "getchallenge <n> <com_gamename>" (n a random int)
// and answers "challengeResponse <server> <n> <protocol>", or, when the
// game name differs from its own, `print\nGame mismatch: This is a
// <gamename> server\n` (testdata/openarena_print_gamemismatch.hex).
// Quake III 1.32 and ET send a bare "getchallenge"; ET's master sends one
// before its getstatus and getinfo probes (seed 000, section III.D).
type GetChallenge struct {
	// Challenge is the client's challenge, which ioquake3 reads with
	// atoi and echoes; "" sends none.
	Challenge string `json:"challenge,omitempty"`
	// GameName is the client's com_gamename (ioquake3); "" sends none.
	// It needs a Challenge before it.
	GameName string `json:"game_name,omitempty"`
	// Terminator is the line ending; TermDefault sends none.
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the request.
func (g GetChallenge) AppendBinary(b []byte) ([]byte, error) {
	words := make([]string, 0, 2)
	if g.Challenge != "" {
		words = append(words, g.Challenge)
	}
	if g.GameName != "" {
		if g.Challenge == "" {
			return b, fmt.Errorf("%s: %w: a game name needs a challenge before it", cmdGetChallenge, ErrInvalid)
		}
		words = append(words, g.GameName)
	}
	return appendWords(b, cmdGetChallenge, words, g.Terminator.resolve(TermNone))
}

func parseGetChallenge(body []byte) (Message, error) {
	l, err := splitLine(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmdGetChallenge, err)
	}
	g := GetChallenge{Terminator: l.term}
	switch len(l.words) {
	case 2:
		g.GameName = l.words[1]
		fallthrough
	case 1:
		g.Challenge = l.words[0]
	case 0:
	default:
		return nil, fmt.Errorf("%s: %w: %d words, want at most 2", cmdGetChallenge, ErrMalformed, len(l.words))
	}
	return l.finish(cmdGetChallenge, g)
}

// ChallengeResponse is a game server's answer to a getchallenge:
//
//	FF FF FF FF "challengeResponse " <challenge> [" " <client challenge> " " <protocol>]
//
// ioquake3 1.36 sends all three, e.g. "challengeResponse 1626205626
// 477913120 71" with no line ending
// (testdata/openarena_challengeResponse.hex); Quake III 1.32 and ET send
// the server challenge alone.
type ChallengeResponse struct {
	// Challenge is the server's challenge, to be sent back in "connect".
	Challenge string `json:"challenge"`
	// ClientChallenge echoes the client's getchallenge argument; ""
	// when absent.
	ClientChallenge string `json:"client_challenge,omitempty"`
	// Protocol is the server's protocol; 0 means absent. It needs a
	// ClientChallenge before it.
	Protocol int `json:"protocol,omitempty"`
	// Terminator is the line ending; TermDefault sends none.
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the response.
func (r ChallengeResponse) AppendBinary(b []byte) ([]byte, error) {
	words := []string{r.Challenge}
	if r.ClientChallenge != "" {
		words = append(words, r.ClientChallenge)
	}
	switch {
	case r.Protocol < 0 || int64(r.Protocol) > 1<<31-1:
		return b, fmt.Errorf("%s: %w: protocol %d", cmdChallengeResponse, ErrInvalid, r.Protocol)
	case r.Protocol > 0 && r.ClientChallenge == "":
		return b, fmt.Errorf("%s: %w: a protocol needs a client challenge before it", cmdChallengeResponse, ErrInvalid)
	case r.Protocol > 0:
		words = append(words, strconv.Itoa(r.Protocol))
	}
	return appendWords(b, cmdChallengeResponse, words, r.Terminator.resolve(TermNone))
}

func parseChallengeResponse(body []byte) (Message, error) {
	l, err := splitLine(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmdChallengeResponse, err)
	}
	r := ChallengeResponse{Terminator: l.term}
	switch len(l.words) {
	case 3:
		if r.Protocol, err = parseNumber("protocol", l.words[2]); err != nil {
			return nil, fmt.Errorf("%s: %w", cmdChallengeResponse, err)
		}
		fallthrough
	case 2:
		r.ClientChallenge = l.words[1]
		fallthrough
	case 1:
		r.Challenge = l.words[0]
	case 0:
		return nil, fmt.Errorf("%s: %w", cmdChallengeResponse, l.short("challenge"))
	default:
		return nil, fmt.Errorf("%s: %w: %d words, want at most 3", cmdChallengeResponse, ErrMalformed, len(l.words))
	}
	return l.finish(cmdChallengeResponse, r)
}

// DPChallenge is a DarkPlaces server's answer to "getchallenge":
//
//	FF FF FF FF "challenge " <challenge> [00 <trailer>]
//
// Older DarkPlaces sends the string alone (NetConn_WriteString). Current
// DarkPlaces (netconn.c) sends it with its NUL and lets
// Crypto_ServerAppendToChallenge append the d0_blind_id key negotiation
// after that NUL; this package keeps those bytes opaque in Trailer.
type DPChallenge struct {
	// Challenge is the server's challenge string.
	Challenge string `json:"challenge"`
	// Terminator is TermNone or TermNUL (TermLF is read too);
	// TermDefault sends none, or the NUL when there is a Trailer.
	Terminator Terminator `json:"terminator,omitempty"`
	// Trailer holds the bytes after the NUL (DarkPlaces crypto
	// negotiation), kept as they came; "" when absent.
	Trailer string `json:"trailer,omitempty"`
}

// AppendBinary appends the response.
func (c DPChallenge) AppendBinary(b []byte) ([]byte, error) {
	def := TermNone
	if c.Trailer != "" {
		def = TermNUL
	}
	t := c.Terminator.resolve(def)
	if c.Trailer != "" && t != TermNUL {
		return b, fmt.Errorf("%s: %w: a trailer needs the NUL terminator", cmdChallenge, ErrInvalid)
	}
	out, err := appendWords(b, cmdChallenge, []string{c.Challenge}, t)
	if err != nil {
		return b, err
	}
	return append(out, c.Trailer...), nil
}

func parseDPChallenge(body []byte) (Message, error) {
	content, trailer, hasNUL := bytes.Cut(body, []byte{0})
	l, err := splitLine(content)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmdChallenge, err)
	}
	c := DPChallenge{Terminator: l.term}
	if hasNUL {
		if l.term != TermNone {
			return nil, fmt.Errorf("%s: %w: newline before the NUL", cmdChallenge, ErrMalformed)
		}
		c.Terminator = TermNUL
		c.Trailer = string(trailer)
		l.cut = false // the NUL ended the line
	}
	switch len(l.words) {
	case 1:
		c.Challenge = l.words[0]
	case 0:
		if hasNUL {
			return nil, fmt.Errorf("%s: %w: missing challenge", cmdChallenge, ErrMalformed)
		}
		return nil, fmt.Errorf("%s: %w", cmdChallenge, l.short("challenge"))
	default:
		return nil, fmt.Errorf("%s: %w: %d words, want 1", cmdChallenge, ErrMalformed, len(l.words))
	}
	return l.finish(cmdChallenge, c)
}

// appendWords writes a one-line command: the word, each argument after a
// space, and the terminator. Every argument must be a token.
func appendWords(b []byte, word string, args []string, t Terminator) ([]byte, error) {
	for _, a := range args {
		if err := validToken(word+" argument", a); err != nil {
			return b, err
		}
	}
	out := appendHeader(b, word)
	for _, a := range args {
		out = append(out, ' ')
		out = append(out, a...)
	}
	out, err := t.append(out)
	if err != nil {
		return b, err
	}
	return out, nil
}
