package q3

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// Print is a message for the user's console:
//
//	FF FF FF FF "print" 0A <text>
//
// Servers send it to refuse something, e.g. ioquake3's answer to a
// getchallenge for another game: `print\nGame mismatch: This is a
// Quake3Arena server\n`.
type Print struct {
	// Text is everything after the newline, its own trailing newline
	// included. It holds no NUL (the engine's MSG_ReadString stops
	// there).
	Text string `json:"text"`
}

// AppendBinary appends the message.
func (p Print) AppendBinary(b []byte) ([]byte, error) {
	if strings.IndexByte(p.Text, 0) >= 0 {
		return b, fmt.Errorf("%s: %w: NUL in the text", cmdPrint, ErrInvalid)
	}
	out := appendHeader(b, cmdPrint)
	out = append(out, '\n')
	return append(out, p.Text...), nil
}

func parsePrint(body []byte) (Message, error) {
	rest, err := expectNewline(cmdPrint, body)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(rest, 0) >= 0 {
		return nil, fmt.Errorf("%s: %w: NUL in the text", cmdPrint, ErrMalformed)
	}
	return Print{Text: string(rest)}, nil
}

// GetMOTD is Enemy Territory's request for the message of the day, sent by
// the client at start-up to the master's port 27951 (seed 000, section
// III.C):
//
//	FF FF FF FF "getmotd " '"' <info string> '"' [0A]
//
// The info string carries "challenge", "renderer" and "version"; the
// quotes are on the wire.
type GetMOTD struct {
	// Info is the quoted info string.
	Info infostring.Info `json:"info"`
	// Terminator is the line ending; TermDefault writes a newline, as ET
	// 2.60 did.
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the request. Info may hold no double quote.
func (g GetMOTD) AppendBinary(b []byte) ([]byte, error) {
	return appendQuotedInfo(b, cmdGetMOTD, g.Info, g.Terminator.resolve(TermLF))
}

func parseGetMOTD(body []byte) (Message, error) {
	in, t, err := parseQuotedInfo(cmdGetMOTD, body)
	if in == nil && t == TermDefault && err != nil {
		return nil, err
	}
	return GetMOTD{Info: in, Terminator: t}, err
}

// MOTD is the ET master's answer to getmotd:
//
//	FF FF FF FF "motd " '"' <info string> '"' [0A]
//
// The info string carries the echoed "challenge" and "motd", the text.
type MOTD struct {
	// Info is the quoted info string.
	Info infostring.Info `json:"info"`
	// Terminator is the line ending; TermDefault writes none (the seed
	// shows none).
	Terminator Terminator `json:"terminator,omitempty"`
}

// AppendBinary appends the response. Info may hold no double quote.
func (m MOTD) AppendBinary(b []byte) ([]byte, error) {
	return appendQuotedInfo(b, cmdMOTD, m.Info, m.Terminator.resolve(TermNone))
}

func parseMOTD(body []byte) (Message, error) {
	in, t, err := parseQuotedInfo(cmdMOTD, body)
	if in == nil && t == TermDefault && err != nil {
		return nil, err
	}
	return MOTD{Info: in, Terminator: t}, err
}

func appendQuotedInfo(b []byte, word string, in infostring.Info, t Terminator) ([]byte, error) {
	for _, p := range in {
		if strings.Contains(p.Key, `"`) || strings.Contains(p.Value, `"`) {
			return b, fmt.Errorf("%s: %w: double quote in the info string", word, ErrInvalid)
		}
	}
	out := appendHeader(b, word)
	out = append(out, ' ', '"')
	out, err := appendInfo(out, in)
	if err != nil {
		return b, fmt.Errorf("%s: %w", word, err)
	}
	out = append(out, '"')
	out, err = t.append(out)
	if err != nil {
		return b, err
	}
	return out, nil
}

// parseQuotedInfo reads ` "<info>"` and an optional line ending. On a
// defect after the opening quote it returns the pairs read so far with a
// terminator other than TermDefault, so the caller returns a partial
// message.
func parseQuotedInfo(word string, body []byte) (infostring.Info, Terminator, error) {
	if len(body) == 0 || (len(body) == 1 && body[0] == ' ') {
		return nil, TermDefault, fmt.Errorf("%s: %w: no quoted info string", word, ErrTruncated)
	}
	if body[0] != ' ' || body[1] != '"' {
		return nil, TermDefault, fmt.Errorf("%s: %w: want ` \"` after the command word", word, ErrMalformed)
	}
	inner := body[2:]
	end := bytes.IndexByte(inner, '"')
	if end < 0 {
		in, err := parseInfo(string(inner), true)
		if err == nil {
			err = fmt.Errorf("%w: no closing quote", ErrTruncated)
		}
		return in, TermNone, fmt.Errorf("%s: %w", word, err)
	}
	t := TermNone
	switch after := inner[end+1:]; string(after) {
	case "":
	case "\n":
		t = TermLF
	case "\x00":
		t = TermNUL
	default:
		return nil, TermDefault, fmt.Errorf("%s: %w: %d bytes after the closing quote", word, ErrMalformed, len(after))
	}
	in, err := parseInfo(string(inner[:end]), false)
	if err != nil {
		return in, t, fmt.Errorf("%s: %w", word, err)
	}
	return in, t, nil
}
