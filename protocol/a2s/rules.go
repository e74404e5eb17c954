package a2s

import "fmt"

// RulesRequest is A2S_RULES: FF FF FF FF 56 <challenge:4>. Like
// A2S_PLAYER, a request with [NoChallenge] asks for an S2C_CHALLENGE, and
// the request is sent again with the challenge it carries.
type RulesRequest struct {
	// Challenge from the server's [Challenge]; [NoChallenge] asks for one.
	Challenge uint32 `json:"challenge"`
}

// ParseRulesRequest decodes A2S_RULES. Lenient, as ParsePlayerRequest:
// bytes after the challenge are ignored.
func ParseRulesRequest(b []byte) (RulesRequest, error) {
	body, err := checkHeader(b, TypeRulesRequest, "an A2S_RULES request")
	if err != nil {
		return RulesRequest{}, err
	}
	r := reader{b: body}
	m := RulesRequest{Challenge: r.u32("challenge")}
	return m, r.err
}

// AppendBinary appends the request.
func (m RulesRequest) AppendBinary(b []byte) ([]byte, error) {
	w := writer{b: b}
	w.header(TypeRulesRequest)
	w.u32(m.Challenge)
	return w.b, nil
}

// Rule is one server variable of an A2S_RULES reply.
type Rule struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Rules is the A2S_RULES reply:
//
//	FF FF FF FF 45 <count:2 LE> { <name> 00 <value> 00 }...
//
// A server with many variables (several hundred on a modded server) sends
// it as a split reply; join the packets with a [Reassembler] first.
type Rules struct {
	Rules []Rule `json:"rules"`
}

// MaxRules is the most rules a reply can list: the count is 16 bits.
// Valve documents it as a signed short; a count above 32767 is read as
// unsigned, as the most a server could mean.
const MaxRules = 0xFFFF

// minRuleSize is the fewest bytes a rule takes on the wire: two empty
// strings, two NULs.
const minRuleSize = 2

// ParseRules decodes an A2S_RULES reply. The count comes from the wire
// and is not trusted: nothing is allocated from it, and when the packet
// ends before count rules (or inside a string, a missing NUL) ParseRules
// returns the rules that parsed with an error wrapping [ErrTruncated].
// Lenient: bytes after count rules are ignored.
func ParseRules(b []byte) (Rules, error) {
	body, err := checkHeader(b, TypeRules, "an A2S_RULES reply")
	if err != nil {
		return Rules{}, err
	}
	r := reader{b: body}
	count := int(r.u16("rule count"))
	var m Rules
	for i := 0; i < count && r.err == nil; i++ {
		if len(r.b) < minRuleSize {
			r.fail("rule")
			break
		}
		rule := Rule{Name: r.str("rule name")}
		rule.Value = r.str("rule value")
		if r.err == nil {
			m.Rules = append(m.Rules, rule)
		}
	}
	if r.err != nil {
		return m, fmt.Errorf("after %d of %d rules: %w", len(m.Rules), count, r.err)
	}
	return m, nil
}

// AppendBinary appends the reply. It refuses more than [MaxRules] rules
// and NULs inside names or values.
func (m Rules) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Rules) > MaxRules {
		return b, fmt.Errorf("%w: %d rules, limit %d", ErrBadField, len(m.Rules), MaxRules)
	}
	w := writer{b: b}
	w.header(TypeRules)
	w.u16(uint16(len(m.Rules)))
	for _, r := range m.Rules {
		w.str(r.Name, "rule name")
		w.str(r.Value, "rule value")
	}
	if w.err != nil {
		return b, w.err
	}
	return w.b, nil
}
