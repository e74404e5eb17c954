package q3

import (
	"fmt"
	"strings"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// GetInfo asks a game server for its short description:
//
//	FF FF FF FF "getinfo" [" " <challenge>] [0A | 00]
//
// ioquake3 sends "getinfo xxx" with no line ending; qstat sends
// "getinfo\n". The server answers with an [InfoResponse] that echoes the
// challenge as its "challenge" key.
type GetInfo struct {
	// Challenge is echoed back by the server; "" sends none. Encoding
	// applies [ValidateChallenge]; decoding takes any word.
	Challenge string `json:"challenge,omitempty"`
	// Terminator is the line ending; TermDefault sends none.
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the request.
func (g GetInfo) AppendBinary(b []byte) ([]byte, error) {
	return appendChallengeRequest(b, cmdGetInfo, g.Challenge, g.Terminator)
}

func parseGetInfo(body []byte) (Message, error) {
	c, term, cut, err := parseChallengeRequest(cmdGetInfo, body)
	if err != nil {
		return nil, err
	}
	return line{cut: cut}.finish(cmdGetInfo, GetInfo{Challenge: c, Terminator: term})
}

// GetStatus asks a game server for its full server info and player list:
//
//	FF FF FF FF "getstatus" [" " <challenge>] [0A | 00]
//
// qstat sends "getstatus\n", gamedig "getstatus\x00" (both without a
// challenge), masters "getstatus <challenge>". The answer is a
// [StatusResponse].
type GetStatus struct {
	// Challenge is echoed back by the server; "" sends none. Encoding
	// applies [ValidateChallenge]; decoding takes any word.
	Challenge string `json:"challenge,omitempty"`
	// Terminator is the line ending; TermDefault sends none.
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the request.
func (g GetStatus) AppendBinary(b []byte) ([]byte, error) {
	return appendChallengeRequest(b, cmdGetStatus, g.Challenge, g.Terminator)
}

func parseGetStatus(body []byte) (Message, error) {
	c, term, cut, err := parseChallengeRequest(cmdGetStatus, body)
	if err != nil {
		return nil, err
	}
	return line{cut: cut}.finish(cmdGetStatus, GetStatus{Challenge: c, Terminator: term})
}

func appendChallengeRequest(b []byte, word, challenge string, t Terminator) ([]byte, error) {
	if challenge != "" {
		if err := ValidateChallenge(challenge); err != nil {
			return b, fmt.Errorf("%s: %w", word, err)
		}
	}
	out := appendHeader(b, word)
	if challenge != "" {
		out = append(out, ' ')
		out = append(out, challenge...)
	}
	out, err := t.resolve(TermNone).append(out)
	if err != nil {
		return b, err
	}
	return out, nil
}

// parseChallengeRequest reads the optional challenge. Lenient: any word is
// taken, however long and whatever it holds; what to do with a challenge
// ioquake3 would refuse (longer than MaxChallengeLen) is the responder's
// decision.
func parseChallengeRequest(word string, body []byte) (challenge string, term Terminator, cut bool, err error) {
	l, err := splitLine(body)
	if err != nil {
		return "", 0, false, fmt.Errorf("%s: %w", word, err)
	}
	switch len(l.words) {
	case 0:
	case 1:
		challenge = l.words[0]
	default:
		return "", 0, false, fmt.Errorf("%s: %w: %d words after the challenge", word, ErrMalformed, len(l.words)-1)
	}
	return challenge, l.term, l.cut, nil
}

// InfoResponse is a game server's short description:
//
//	FF FF FF FF "infoResponse" 0A <info string> [0A | 00]
//
// OpenArena 0.8.8 on ioquake3 1.36 sends the echoed challenge as the last
// key (and no challenge key at all for a bare getinfo), and ends the
// datagram with the last value: no newline.
type InfoResponse struct {
	// Info is the server's info string, in wire order.
	Info infostring.Info `json:"info"`
	// Terminator is a byte after the info string; TermDefault sends
	// none, as ioquake3 and DarkPlaces do.
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the response. It refuses what the info string
// cannot carry (see [infostring.Info.AppendBinary]).
func (r InfoResponse) AppendBinary(b []byte) ([]byte, error) {
	out := appendHeader(b, cmdInfoResponse)
	out = append(out, '\n')
	out, err := appendInfo(out, r.Info)
	if err != nil {
		return b, fmt.Errorf("%s: %w", cmdInfoResponse, err)
	}
	out, err = r.Terminator.resolve(TermNone).append(out)
	if err != nil {
		return b, err
	}
	return out, nil
}

func parseInfoResponse(body []byte) (Message, error) {
	rest, err := expectNewline(cmdInfoResponse, body)
	if err != nil {
		return nil, err
	}
	r := InfoResponse{Terminator: TermNone}
	// Lenient: one trailing newline or NUL is read as a line ending.
	if n := len(rest); n > 0 && (rest[n-1] == '\n' || rest[n-1] == 0) {
		r.Terminator = TermLF
		if rest[n-1] == 0 {
			r.Terminator = TermNUL
		}
		rest = rest[:n-1]
	}
	r.Info, err = parseInfo(string(rest), r.Terminator == TermNone)
	if err != nil {
		return r, fmt.Errorf("%s: %w", cmdInfoResponse, err)
	}
	return r, nil
}

// expectNewline checks the 0A that follows the command word of the
// responses that carry an info string.
func expectNewline(word string, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%s: %w: no newline after the command word", word, ErrTruncated)
	}
	if body[0] != '\n' {
		return nil, fmt.Errorf("%s: %w: byte %#02x after the command word, want 0x0a", word, ErrMalformed, body[0])
	}
	return body[1:], nil
}

func appendInfo(b []byte, in infostring.Info) ([]byte, error) {
	if n := in.Len(); n > MaxInfoLen {
		return b, fmt.Errorf("%w: info string of %d bytes, limit %d", ErrInvalid, n, MaxInfoLen)
	}
	out, err := in.AppendBinary(b)
	if err != nil {
		return b, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, nil
}

// parseInfo reads an info string and returns the pairs read before any
// defect. atEnd says the string ran to the end of the datagram: a key
// without its value, or a backslash with nothing after it, is then a cut
// (ErrTruncated). Inside a delimited field (a status line, a quoted motd)
// a lone trailing backslash is dropped (Enemy Territory's motd ends with
// one, seed 000 section III.C) and a key without a value is ErrMalformed.
func parseInfo(s string, atEnd bool) (infostring.Info, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxInfoLen {
		return nil, fmt.Errorf("%w: info string of %d bytes, limit %d", ErrMalformed, len(s), MaxInfoLen)
	}
	complete := s
	dangling := ""
	hasDangling := false
	if strings.Count(strings.TrimPrefix(s, `\`), `\`)%2 == 0 {
		// The separators are even after the optional leading one: the
		// last part is a key without a value.
		i := strings.LastIndexByte(s, '\\')
		if i >= 0 {
			complete, dangling = s[:i], s[i+1:]
		} else {
			complete, dangling = "", s
		}
		hasDangling = true
	}
	info, err := infostring.Parse(complete)
	if len(info) == 0 {
		info = nil // one spelling of "no pairs", so decoded values compare equal
	}
	if err != nil {
		return info, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if hasDangling {
		switch {
		case atEnd:
			return info, fmt.Errorf("%w: info string ends inside key %q", ErrTruncated, clip(dangling))
		case dangling != "":
			return info, fmt.Errorf("%w: info key %q has no value", ErrMalformed, clip(dangling))
		}
		// Lenient: a trailing backslash inside a delimited field.
	}
	return info, nil
}
