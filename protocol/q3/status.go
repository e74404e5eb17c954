package q3

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// StatusResponse is a game server's full server info and player list:
//
//	FF FF FF FF "statusResponse" 0A <info string> 0A { <player line> 0A }
//	player line: <score> " " <ping> {" " <number>} " " '"' <name> '"'
//
// ioquake3 (SVC_Status) writes each player as `%i %i "%s"` (score, ping,
// name); Enemy Territory and RtCW do the same. DarkPlaces games other than
// the oldest Nexuiz add the team between ping and name (`%d %d %d "%s"`),
// kept in [Player.Extra]. Bots have ping 0. With no players the datagram
// ends with the newline after the info string.
//
// Decoding is lenient about player lines, as quakestat and gamedig are: a
// name runs from the first double quote to the last one on its line (a
// name with a stray '"' keeps it), and a line that still does not read
// (no quote, fewer than two numbers before the name, a NUL) costs that
// line alone: it is kept as it came in BadLines and the other players
// are read.
type StatusResponse struct {
	// Info is the server's info string (serverinfo cvars plus the echoed
	// challenge), in wire order.
	Info infostring.Info `json:"info"`
	// Players are the connected clients, in wire order.
	Players []Player `json:"players"`
	// BadLines are the player lines that did not read, as sent (without
	// their newline), in wire order; AppendBinary writes them back after
	// the players.
	BadLines []string `json:"bad_lines,omitempty"`
}

// Player is one line of a statusResponse.
type Player struct {
	// Score is the player's score (frags); it may be negative.
	Score int `json:"score"`
	// Ping is the player's latency in milliseconds; 0 for bots, 999 for
	// players still connecting.
	Ping int `json:"ping"`
	// Extra holds the numbers some games add after the ping (DarkPlaces:
	// the team); nil for Quake III, ET and RtCW.
	Extra []int `json:"extra,omitempty"`
	// Name is the player's name as sent, ^N colour codes and all; it may
	// contain spaces and double quotes but no newline or NUL.
	Name string `json:"name"`
}

// AppendBinary appends the response.
func (r StatusResponse) AppendBinary(b []byte) ([]byte, error) {
	for i, p := range r.Players {
		if j := strings.IndexAny(p.Name, "\n\x00"); j >= 0 {
			return b, fmt.Errorf("%s: %w: player %d name has byte %#02x", cmdStatusResponse, ErrInvalid, i, p.Name[j])
		}
	}
	for i, l := range r.BadLines {
		if _, err := parsePlayer([]byte(l)); err == nil || strings.ContainsAny(l, "\n") {
			return b, fmt.Errorf("%s: %w: bad line %d reads as a player, or holds a newline", cmdStatusResponse, ErrInvalid, i)
		}
	}
	out := appendHeader(b, cmdStatusResponse)
	out = append(out, '\n')
	out, err := appendInfo(out, r.Info)
	if err != nil {
		return b, fmt.Errorf("%s: %w", cmdStatusResponse, err)
	}
	out = append(out, '\n')
	for _, p := range r.Players {
		out = strconv.AppendInt(out, int64(p.Score), 10)
		out = append(out, ' ')
		out = strconv.AppendInt(out, int64(p.Ping), 10)
		for _, x := range p.Extra {
			out = append(out, ' ')
			out = strconv.AppendInt(out, int64(x), 10)
		}
		out = append(out, ' ', '"')
		out = append(out, p.Name...)
		out = append(out, '"', '\n')
	}
	for _, l := range r.BadLines {
		out = append(append(out, l...), '\n')
	}
	return out, nil
}

func parseStatusResponse(body []byte) (Message, error) {
	rest, err := expectNewline(cmdStatusResponse, body)
	if err != nil {
		return nil, err
	}
	var r StatusResponse
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		r.Info, err = parseInfo(string(rest), true)
		if err == nil {
			err = fmt.Errorf("%w: no newline after the info string", ErrTruncated)
		}
		return r, fmt.Errorf("%s: %w", cmdStatusResponse, err)
	}
	if r.Info, err = parseInfo(string(rest[:nl]), false); err != nil {
		return r, fmt.Errorf("%s: %w", cmdStatusResponse, err)
	}
	rest = rest[nl+1:]
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return r, fmt.Errorf("%s: %w: player %d has no newline", cmdStatusResponse, ErrTruncated, len(r.Players))
		}
		if p, err := parsePlayer(rest[:nl]); err != nil {
			r.BadLines = append(r.BadLines, string(rest[:nl])) // this line only
		} else {
			r.Players = append(r.Players, p)
		}
		rest = rest[nl+1:]
	}
	return r, nil
}

// parsePlayer reads `score ping [extra...] "name"`: the name runs from
// the first quote to the last, which ends the line.
func parsePlayer(ln []byte) (Player, error) {
	var p Player
	q := bytes.IndexByte(ln, '"')
	if q < 0 {
		return p, fmt.Errorf("%w: no opening quote before the name", ErrMalformed)
	}
	tail := ln[q+1:]
	end := bytes.LastIndexByte(tail, '"')
	if end < 0 {
		return p, fmt.Errorf("%w: no closing quote after the name", ErrMalformed)
	}
	if end != len(tail)-1 {
		return p, fmt.Errorf("%w: %d bytes after the closing quote", ErrMalformed, len(tail)-1-end)
	}
	name := tail[:end]
	if bytes.IndexByte(name, 0) >= 0 {
		return p, fmt.Errorf("%w: NUL in the name", ErrMalformed)
	}
	p.Name = string(name)
	// Lenient: numbers may be separated by runs of spaces.
	fields := strings.Fields(string(ln[:q]))
	if len(fields) < 2 {
		return p, fmt.Errorf("%w: %d numbers before the name, want score and ping", ErrMalformed, len(fields))
	}
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return p, fmt.Errorf("%w: field %d %q is not a number", ErrMalformed, i, clip(f))
		}
		switch i {
		case 0:
			p.Score = int(n)
		case 1:
			p.Ping = int(n)
		default:
			p.Extra = append(p.Extra, int(n))
		}
	}
	if len(ln) > q && q > 0 && ln[q-1] != ' ' {
		return p, fmt.Errorf("%w: no space before the name", ErrMalformed)
	}
	return p, nil
}
