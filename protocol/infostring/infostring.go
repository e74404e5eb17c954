package infostring

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Length limits of the Quake III engine (q_shared.h). They apply to the
// whole encoded string, leading backslashes included.
const (
	// MaxInfoString is MAX_INFO_STRING: the longest info string the engine
	// keeps for serverinfo in an infoResponse, or for a userinfo.
	MaxInfoString = 1024
	// MaxBigInfoString is BIG_INFO_STRING: the longest serverinfo the
	// engine sends in a statusResponse.
	MaxBigInfoString = 8192
)

var (
	// ErrMalformed reports an info string that breaks the wire format: an
	// empty key, a key without a value, or a NUL or newline inside it.
	ErrMalformed = errors.New("infostring: malformed")
	// ErrInvalid reports a key or value that [Info.Validate] refuses.
	ErrInvalid = errors.New("infostring: invalid")
	// ErrTooLong reports an info string longer than the limit asked for.
	ErrTooLong = errors.New("infostring: too long")
	// ErrMissing reports a key that is not present.
	ErrMissing = errors.New("infostring: key missing")
)

// Pair is one key and its value.
type Pair struct {
	Key   string
	Value string
}

// Info is an ordered list of key/value pairs. The zero value is an empty
// list ready to use. Duplicate keys are kept as they came; lookups see the
// first one, as the engine does.
type Info []Pair

// Parse reads an info string. A leading backslash is optional (the engine
// skips one; Enemy Territory's motd omits it). Parse is lenient where the
// engine is: trailing bytes after the last value are part of that value.
//
// On a defect Parse returns the pairs read before it together with an error
// wrapping [ErrMalformed], so a caller can keep what parsed and still say
// why it stopped.
func Parse(s string) (Info, error) {
	if s == "" {
		return nil, nil
	}
	// Lenient: the leading separator is optional.
	s = strings.TrimPrefix(s, `\`)
	// Count separators first so the result is allocated once; the count
	// comes from the bytes actually present, never from a field.
	info := make(Info, 0, (strings.Count(s, `\`)+1)/2)
	for s != "" {
		key, rest, ok := strings.Cut(s, `\`)
		if !ok {
			return info, fmt.Errorf("%w: key %q has no value", ErrMalformed, clip(key))
		}
		if key == "" {
			return info, fmt.Errorf("%w: empty key after %d pairs", ErrMalformed, len(info))
		}
		value, next, _ := strings.Cut(rest, `\`)
		if err := wireSafe(key); err != nil {
			return info, err
		}
		if err := wireSafe(value); err != nil {
			return info, err
		}
		info = append(info, Pair{Key: key, Value: value})
		s = next
	}
	return info, nil
}

// wireSafe reports whether s can stand as a key or value inside a Quake III
// packet: the engine ends strings at NUL, and statusResponse separates the
// info string from the player list with a newline.
func wireSafe(s string) error {
	if i := strings.IndexAny(s, "\x00\n"); i >= 0 {
		return fmt.Errorf("%w: byte %#02x in %q", ErrMalformed, s[i], clip(s))
	}
	return nil
}

// Get returns the value of the first key equal to key without regard to
// ASCII case, and whether there was one.
func (in Info) Get(key string) (string, bool) {
	if i := in.index(key); i >= 0 {
		return in[i].Value, true
	}
	return "", false
}

// Int returns the value of key as a decimal integer. It wraps [ErrMissing]
// when the key is absent, and reports a syntax error for a non-number
// (the engine's atoi would read "" or "abc" as 0; scout does not).
func (in Info) Int(key string) (int, error) {
	v, ok := in.Get(key)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrMissing, key)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("infostring: key %q: %w", key, err)
	}
	return n, nil
}

// Set replaces the value of the first key equal to key (ignoring ASCII
// case, keeping its spelling and place) or appends the pair.
func (in *Info) Set(key, value string) {
	if i := in.index(key); i >= 0 {
		(*in)[i].Value = value
		return
	}
	*in = append(*in, Pair{Key: key, Value: value})
}

// Delete removes every key equal to key without regard to ASCII case and
// reports whether there was one.
func (in *Info) Delete(key string) bool {
	kept := (*in)[:0]
	for _, p := range *in {
		if !strings.EqualFold(p.Key, key) {
			kept = append(kept, p)
		}
	}
	removed := len(kept) != len(*in)
	clear((*in)[len(kept):])
	*in = kept
	return removed
}

func (in Info) index(key string) int {
	for i, p := range in {
		if strings.EqualFold(p.Key, key) {
			return i
		}
	}
	return -1
}

// Len returns the length of the encoded info string.
func (in Info) Len() int {
	n := 0
	for _, p := range in {
		n += 2 + len(p.Key) + len(p.Value)
	}
	return n
}

// AppendBinary appends the encoded info string to b. It fails, wrapping
// [ErrMalformed], only for what the wire cannot carry: an empty key, or a
// backslash, NUL or newline inside a key or value.
func (in Info) AppendBinary(b []byte) ([]byte, error) {
	for _, p := range in {
		if p.Key == "" {
			return b, fmt.Errorf("%w: empty key", ErrMalformed)
		}
		for _, s := range [2]string{p.Key, p.Value} {
			if strings.Contains(s, `\`) {
				return b, fmt.Errorf("%w: backslash in %q", ErrMalformed, clip(s))
			}
			if err := wireSafe(s); err != nil {
				return b, err
			}
		}
	}
	for _, p := range in {
		b = append(b, '\\')
		b = append(b, p.Key...)
		b = append(b, '\\')
		b = append(b, p.Value...)
	}
	return b, nil
}

// String returns the encoded info string, or a description of why it
// cannot be encoded.
func (in Info) String() string {
	b, err := in.AppendBinary(nil)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// Validate applies the engine's rules for info strings it originates
// (Info_SetValueForKey and Info_Validate): keys non-empty; no backslash,
// double quote, semicolon or control byte (below 0x20, or 0x7f) in any key
// or value; the encoded length at most limit bytes. Pass [MaxInfoString] or
// [MaxBigInfoString]; a limit of 0 or less skips the length check.
func (in Info) Validate(limit int) error {
	for _, p := range in {
		if p.Key == "" {
			return fmt.Errorf("%w: empty key", ErrInvalid)
		}
		if err := validChars(p.Key); err != nil {
			return fmt.Errorf("key %q: %w", clip(p.Key), err)
		}
		if err := validChars(p.Value); err != nil {
			return fmt.Errorf("value of %q: %w", clip(p.Key), err)
		}
	}
	if n := in.Len(); limit > 0 && n > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLong, n, limit)
	}
	return nil
}

func validChars(s string) error {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\', c == '"', c == ';':
			return fmt.Errorf("%w: %q not allowed", ErrInvalid, c)
		case c < 0x20, c == 0x7f:
			return fmt.Errorf("%w: control byte %#02x", ErrInvalid, c)
		}
	}
	return nil
}

// MarshalJSON writes the pairs as one JSON object with the keys in wire
// order. Bytes that are not UTF-8 become U+FFFD, as encoding/json does for
// any string.
func (in Info) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range in {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(p.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a JSON object into pairs, keeping the order of its
// keys.
func (in *Info) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("infostring: JSON value is not an object")
	}
	out := Info{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("infostring: value of %q: %w", kt, err)
		}
		out = append(out, Pair{Key: kt.(string), Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	*in = out
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
