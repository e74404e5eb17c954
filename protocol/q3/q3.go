package q3

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// Prefix starts every connectionless packet: four 0xFF bytes (-1 as a
// 32-bit sequence number, which the engine reserves for out-of-band data).
const Prefix = "\xff\xff\xff\xff"

// Limits, each taken from the program whose behaviour it follows.
const (
	// MaxChallengeLen is the longest challenge ioquake3 echoes: SVC_Info
	// and SVC_Status drop a getinfo or getstatus whose argument is longer
	// than 128 bytes (the "q3infoboom" fix, sv_main.c). The encoder refuses
	// longer challenges; the decoder accepts them.
	MaxChallengeLen = 128

	// DefaultMaxBytes is the UDP payload budget [EncodeServersResponses]
	// uses when [SplitOptions.MaxBytes] is zero: dpmaster's
	// MAX_PACKET_SIZE_OUT (messages.c). The Q3Master notes (seed 001) ask
	// for at most 1536 bytes so that no reply is fragmented.
	DefaultMaxBytes = 1400

	// IDMasterEntriesPerPacket is how many servers id Software's master
	// put in one getserversResponse (seed 000, section II.B). Pass it as
	// [SplitOptions.MaxEntries] to reproduce that packet size.
	IDMasterEntriesPerPacket = 112

	// MaxInfoLen is the longest info string Parse accepts and
	// AppendBinary writes: the engine's BIG_INFO_STRING
	// ([infostring.MaxBigInfoString], 8192 bytes), the buffer ioquake3
	// builds a statusResponse's serverinfo in. Nothing longer fits an
	// engine's buffers; a longer one is garbage or an attack
	// (ErrMalformed when decoding, ErrInvalid when encoding).
	MaxInfoLen = infostring.MaxBigInfoString

	// maxErrorWord bounds how much of an attacker's word an error quotes.
	maxErrorWord = 32
)

var (
	// ErrNotQ3 reports a packet that does not start with [Prefix].
	ErrNotQ3 = errors.New("q3: not a connectionless packet")
	// ErrUnknownCommand reports a command word this package does not know.
	// The wrapping error names the word.
	ErrUnknownCommand = errors.New("q3: unknown command")
	// ErrTruncated reports a packet that ends before its message does:
	// a cut entry, a missing word, a line without its newline.
	ErrTruncated = errors.New("q3: truncated")
	// ErrMalformed reports bytes that break the message's syntax.
	ErrMalformed = errors.New("q3: malformed")
	// ErrInvalid reports a message that AppendBinary refuses to encode:
	// a field the wire cannot carry, or that the engines would refuse
	// (see [ValidateChallenge]).
	ErrInvalid = errors.New("q3: invalid message")
)

// Message is one connectionless packet. AppendBinary appends the whole
// datagram, [Prefix] included; on error b is returned unchanged.
type Message interface {
	AppendBinary(b []byte) ([]byte, error)
}

// ParseQuery parses b as a master reads it: as Parse, except that a
// getservers or getserversExt line ending in whitespace without a
// terminator ("getservers 84 ", as old Enemy Territory clients send) is
// whole, as dpmaster reads it (its option loop skips the empty word).
// Parse reports such a line ErrTruncated, since a datagram cut after a
// space ends the same way. The master and the decoder read packets with
// this one function, so the decoder accepts every query the master
// answers.
func ParseQuery(b []byte) (Message, error) {
	m, err := Parse(b)
	if gs, ok := m.(GetServers); ok && errors.Is(err, ErrTruncated) && gs.Terminator == TermNone &&
		len(b) > 0 && b[len(b)-1] <= ' ' {
		return gs, nil
	}
	return m, err
}

// Command words, spelled as the engines send them.
const (
	cmdHeartbeat             = "heartbeat"
	cmdGetServers            = "getservers"
	cmdGetServersExt         = "getserversExt"
	cmdGetServersResponse    = "getserversResponse"
	cmdGetServersExtResponse = "getserversExtResponse"
	cmdGetInfo               = "getinfo"
	cmdInfoResponse          = "infoResponse"
	cmdGetStatus             = "getstatus"
	cmdStatusResponse        = "statusResponse"
	cmdGetChallenge          = "getchallenge"
	cmdChallengeResponse     = "challengeResponse"
	cmdChallenge             = "challenge"
	cmdPrint                 = "print"
	cmdGetMOTD               = "getmotd"
	cmdMOTD                  = "motd"
	cmdRegister              = "register"
)

// parser reads what follows the command word. It may return a message
// together with an error: the message then holds what parsed before the
// defect.
type parser func(body []byte) (Message, error)

// lookup returns the parser of a known word and its canonical spelling. A
// switch rather than a map, so the package holds no mutable globals.
func lookup(word string) (canonical string, p parser) {
	// The engines compare command words without regard to case
	// (ioquake3's SV_ConnectionlessPacket and CL_ConnectionlessPacket use
	// Q_stricmp); so does this package.
	switch strings.ToLower(word) {
	case "heartbeat":
		return cmdHeartbeat, parseHeartbeat
	case "getservers":
		return cmdGetServers, func(b []byte) (Message, error) { return parseGetServers(b, false) }
	case "getserversext":
		return cmdGetServersExt, func(b []byte) (Message, error) { return parseGetServers(b, true) }
	case "getserversresponse":
		return cmdGetServersResponse, func(b []byte) (Message, error) { return parseServersResponse(b, false) }
	case "getserversextresponse":
		return cmdGetServersExtResponse, func(b []byte) (Message, error) { return parseServersResponse(b, true) }
	case "getinfo":
		return cmdGetInfo, parseGetInfo
	case "inforesponse":
		return cmdInfoResponse, parseInfoResponse
	case "getstatus":
		return cmdGetStatus, parseGetStatus
	case "statusresponse":
		return cmdStatusResponse, parseStatusResponse
	case "getchallenge":
		return cmdGetChallenge, parseGetChallenge
	case "challengeresponse":
		return cmdChallengeResponse, parseChallengeResponse
	case "challenge":
		return cmdChallenge, parseDPChallenge
	case "print":
		return cmdPrint, parsePrint
	case "getmotd":
		return cmdGetMOTD, parseGetMOTD
	case "motd":
		return cmdMOTD, parseMOTD
	}
	return "", nil
}

// knownWords lists the command words, for the truncation check.
func knownWords() [16]string {
	return [...]string{
		cmdHeartbeat, cmdGetServers, cmdGetServersExt, cmdGetServersResponse,
		cmdGetServersExtResponse, cmdGetInfo, cmdInfoResponse, cmdGetStatus,
		cmdStatusResponse, cmdGetChallenge, cmdChallengeResponse, cmdChallenge,
		cmdPrint, cmdGetMOTD, cmdMOTD, cmdRegister,
	}
}

// isWordEnd reports whether c ends a command word: whitespace or a
// control byte (the engine's tokenizer splits on every byte <= ' '), the
// entry separators of a server list, or a quote.
func isWordEnd(c byte) bool {
	return c <= ' ' || c == '\\' || c == '/' || c == '"'
}

// splitWord returns the command word at the start of p and the bytes after
// it.
func splitWord(p []byte) (word string, body []byte) {
	i := 0
	for i < len(p) && !isWordEnd(p[i]) {
		i++
	}
	return string(p[:i]), p[i:]
}

// Command returns the command word of a connectionless packet without
// parsing the rest. For a known command it returns the word in its
// canonical spelling and ok; otherwise ("", false). A dispatcher or a
// counter can use the word as a label: it is always one of a fixed set.
func Command(b []byte) (word string, ok bool) {
	if !bytes.HasPrefix(b, []byte(Prefix)) {
		return "", false
	}
	canonical, p, _, _ := command(b[len(Prefix):])
	return canonical, p != nil
}

// command finds the command word at the start of p (the bytes after the
// prefix) and its parser. register is binary: its address follows the
// word with no separator, so it is matched as a prefix.
func command(p []byte) (canonical string, parse parser, word string, body []byte) {
	if len(p) >= len(cmdRegister) && strings.EqualFold(string(p[:len(cmdRegister)]), cmdRegister) {
		return cmdRegister, parseRegister, string(p[:len(cmdRegister)]), p[len(cmdRegister):]
	}
	word, body = splitWord(p)
	canonical, parse = lookup(word)
	return canonical, parse, word, body
}

// Parse decodes one connectionless packet. It dispatches once on the
// command word and returns one of the message types of this package (as a
// pointer-free value: Heartbeat, GetServers, ServersResponse, ...).
//
// Errors wrap one sentinel: [ErrNotQ3] without the prefix,
// [ErrUnknownCommand] (naming the word) for a command this package does not
// know, [ErrTruncated] when the packet ends before the message does, and
// [ErrMalformed] for anything else it cannot read.
//
// Parse is deliberately lenient where the engines are: command words in
// any case, optional trailing newlines, runs of spaces between words.
//
// Partial results: when a message is damaged part-way (a server list whose
// last entry is cut, a status whose player line lacks its quote), Parse
// returns the message holding everything read before the defect *and* a
// non-nil error saying why it stopped. Callers that only want clean
// packets check the error first; callers that salvage (a server browser
// keeping the servers it did get) may use the message as well. When the
// error is nil the message is complete and encodes back with AppendBinary
// to an equal message.
func Parse(b []byte) (Message, error) {
	if !bytes.HasPrefix(b, []byte(Prefix)) {
		if bytes.HasPrefix([]byte(Prefix), b) {
			return nil, fmt.Errorf("%w: %d of the %d prefix bytes", ErrTruncated, len(b), len(Prefix))
		}
		return nil, ErrNotQ3
	}
	_, p, word, body := command(b[len(Prefix):])
	if word == "" {
		if len(body) == 0 {
			return nil, fmt.Errorf("%w: no command word", ErrTruncated)
		}
		return nil, fmt.Errorf("%w: no command word", ErrMalformed)
	}
	if p == nil {
		if len(body) == 0 {
			// A packet that ends inside a known word was cut short.
			for _, k := range knownWords() {
				if len(word) < len(k) && strings.EqualFold(k[:len(word)], word) {
					return nil, fmt.Errorf("%w: %q is the start of %q", ErrTruncated, word, k)
				}
			}
		}
		return nil, fmt.Errorf("%w %q", ErrUnknownCommand, clip(word))
	}
	return p(body)
}

// Terminator is the byte that ends a text command on the wire. Senders
// differ (qstat writes "getinfo\n", gamedig "getstatus\x00", ioquake3
// "getinfo xxx" with nothing), so a decoded message records the one it
// had and encodes it back. The zero value, TermDefault, lets the encoder
// choose the ending the engines use for that message, documented on each
// type.
type Terminator uint8

const (
	// TermDefault encodes the message's usual ending. Parse never
	// returns it.
	TermDefault Terminator = iota
	// TermNone: the command ends with the datagram.
	TermNone
	// TermLF: a trailing newline (0x0A).
	TermLF
	// TermNUL: a trailing NUL byte (0x00).
	TermNUL

	numTerminators = iota // the count of Terminator values
)

func termNames() [numTerminators]string {
	return [numTerminators]string{TermDefault: "default", TermNone: "none", TermLF: "lf", TermNUL: "nul"}
}

// String returns "default", "none", "lf" or "nul".
func (t Terminator) String() string {
	if names := termNames(); int(t) < len(names) {
		return names[t]
	}
	return "Terminator(" + strconv.Itoa(int(t)) + ")"
}

// MarshalText writes the name returned by String.
func (t Terminator) MarshalText() ([]byte, error) {
	if t >= numTerminators {
		return nil, fmt.Errorf("%w: terminator %d", ErrInvalid, t)
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a name written by MarshalText.
func (t *Terminator) UnmarshalText(b []byte) error {
	for i, n := range termNames() {
		if string(b) == n {
			*t = Terminator(i)
			return nil
		}
	}
	return fmt.Errorf("q3: unknown terminator %q", b)
}

// resolve returns t, or def when t is TermDefault.
func (t Terminator) resolve(def Terminator) Terminator {
	if t == TermDefault {
		return def
	}
	return t
}

// append writes the terminator byte, if any.
func (t Terminator) append(b []byte) ([]byte, error) {
	switch t {
	case TermNone:
		return b, nil
	case TermLF:
		return append(b, '\n'), nil
	case TermNUL:
		return append(b, 0), nil
	}
	return b, fmt.Errorf("%w: terminator %d", ErrInvalid, t)
}

// line is the argument list of a one-line text command.
type line struct {
	words []string
	term  Terminator
	// cut is set when the datagram ends in whitespace with no terminator:
	// the sender was cut before its next word.
	cut bool
}

// splitLine reads the bytes after a command word as whitespace-separated
// words, the way the engine's Cmd_TokenizeString does (every byte <= ' '
// separates; runs of them count once). The line ends at the first newline
// or NUL; nothing may follow it.
func splitLine(body []byte) (line, error) {
	var l line
	l.term = TermNone
	content := body
	if i := indexLineEnd(body); i >= 0 {
		l.term = TermLF
		if body[i] == 0 {
			l.term = TermNUL
		}
		content = body[:i]
		if rest := body[i+1:]; len(rest) > 0 {
			return l, fmt.Errorf("%w: %d bytes after the end of the line", ErrMalformed, len(rest))
		}
	}
	if len(content) > 0 && content[0] > ' ' {
		// Unreachable through Parse, which cuts the word at a separator.
		return l, fmt.Errorf("%w: no space after the command word", ErrMalformed)
	}
	if l.term == TermNone && len(content) > 0 && content[len(content)-1] <= ' ' {
		l.cut = true
	}
	for i := 0; i < len(content); {
		for i < len(content) && content[i] <= ' ' {
			i++
		}
		j := i
		for j < len(content) && content[j] > ' ' {
			j++
		}
		if j > i {
			l.words = append(l.words, string(content[i:j]))
		}
		i = j
	}
	return l, nil
}

func indexLineEnd(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == 0 {
			return i
		}
	}
	return -1
}

// short reports a missing word: ErrTruncated when the datagram simply
// ended (no terminator), ErrMalformed when the sender ended the line.
func (l line) short(what string) error {
	if l.term == TermNone {
		return fmt.Errorf("%w: missing %s", ErrTruncated, what)
	}
	return fmt.Errorf("%w: missing %s", ErrMalformed, what)
}

// finish turns a trailing-whitespace cut into ErrTruncated once the words
// have been read.
func (l line) finish(name string, m Message) (Message, error) {
	if l.cut {
		return m, fmt.Errorf("%s: %w: ends in whitespace before its next word", name, ErrTruncated)
	}
	return m, nil
}

// validToken reports whether s can be sent as one word of a text command:
// non-empty, and no byte the tokenizer splits on (<= ' ').
func validToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' {
			return fmt.Errorf("%w: %s %q: byte %#02x", ErrInvalid, what, clip(s), c)
		}
	}
	return nil
}

// ValidateChallenge reports whether c is a challenge scout may send in a
// getinfo or getstatus (and so one the server will echo back intact):
// 1 to [MaxChallengeLen] bytes from '!' (33) to '~' (126) except '\\',
// '/', ';', '"' and '%'. This is dpmaster's BuildChallenge alphabet
// (messages.c), and it matches what ioquake3 does to the argument:
// Info_SetValueForKey drops a value with '\\', ';' or '"', the tokenizer
// treats "//" as a comment, and MSG_ReadStringLine turns '%' into '.'.
// Errors wrap [ErrInvalid].
func ValidateChallenge(c string) error {
	if c == "" {
		return fmt.Errorf("%w: empty challenge", ErrInvalid)
	}
	if len(c) > MaxChallengeLen {
		return fmt.Errorf("%w: challenge of %d bytes, limit %d", ErrInvalid, len(c), MaxChallengeLen)
	}
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; {
		case ch < '!' || ch > '~':
			return fmt.Errorf("%w: challenge byte %#02x", ErrInvalid, ch)
		case ch == '\\' || ch == '/' || ch == ';' || ch == '"' || ch == '%':
			return fmt.Errorf("%w: challenge byte %q", ErrInvalid, ch)
		}
	}
	return nil
}

// parseNumber reads a non-negative decimal int that fits in 32 bits (the
// engines keep protocols and game types in an int).
func parseNumber(what, s string) (int, error) {
	if !isDigits(s) {
		return 0, fmt.Errorf("%w: %s %q is not a number", ErrMalformed, what, clip(s))
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q out of range", ErrMalformed, what, clip(s))
	}
	return int(n), nil
}

// parseSignedNumber reads a decimal int32 with an optional sign, as C's
// strtol does for the protocols dpmaster reads ("-1", "+68").
func parseSignedNumber(what, s string) (int, error) {
	if !isSignedNumber(s) {
		return 0, fmt.Errorf("%w: %s %q is not a number", ErrMalformed, what, clip(s))
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q out of range", ErrMalformed, what, clip(s))
	}
	return int(n), nil
}

// isSignedNumber reports decimal digits after an optional '+' or '-'.
func isSignedNumber(s string) bool {
	if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return isDigits(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > maxErrorWord {
		return s[:maxErrorWord] + "..."
	}
	return s
}

// appendHeader starts a datagram: the prefix and the command word.
func appendHeader(b []byte, word string) []byte {
	b = append(b, Prefix...)
	return append(b, word...)
}
