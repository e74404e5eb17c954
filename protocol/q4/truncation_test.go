package q4

import (
	"bytes"
	"errors"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

// validPackets are every vector and golden that parses cleanly.
func validPackets(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{
		"qstat_req_q4s_getInfo":               xxd.ReadFile(t, "testdata/qstat_req_q4s_getInfo.hex"),
		"gamedig_req_quake4_getInfo":          xxd.ReadFile(t, "testdata/gamedig_req_quake4_getInfo.hex"),
		"qstat_req_q4m_getServers":            xxd.ReadFile(t, "testdata/qstat_req_q4m_getServers.hex"),
		"qstat_req_dm3m_getServers":           xxd.ReadFile(t, "testdata/qstat_req_dm3m_getServers.hex"),
		"ours_q4_infoResponse":                xxd.ReadFile(t, "testdata/ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex"),
		"ours_q4_master_servers":              xxd.ReadFile(t, "testdata/ours_q4_master_servers_accepted_by_qstat.hex"),
		"seed000_fig6_getServers":             xxd.ReadFile(t, "testdata/seed000_fig6_q4_getServers.hex"),
		"seed000_fig8_infoResponse_head+tail": fig8Spliced(t),
	}
	for _, g := range goldens {
		out["golden-"+g.name] = mustHex(t, g.hex)
	}
	return out
}

// TestTruncatedPrefixes cuts every valid packet at every length. Each
// prefix must fail with ErrTruncated, or be exactly a shorter valid packet
// (a servers list cut at an entry boundary, a raw trailer cut short, a
// Quake 4 getServers cut to a Doom 3 one), which must then re-encode to
// the prefix itself.
func TestTruncatedPrefixes(t *testing.T) {
	for name, full := range validPackets(t) {
		if _, err := Parse(full); err != nil {
			t.Fatalf("%s: full packet: %v", name, err)
		}
		for n := 0; n < len(full); n++ {
			p := full[:n:n]
			m, err := Parse(p)
			if err != nil {
				if !errors.Is(err, ErrTruncated) {
					t.Errorf("%s[:%d]: %v, want ErrTruncated", name, n, err)
				}
				continue
			}
			re, err := m.AppendBinary(nil)
			if err != nil {
				t.Errorf("%s[:%d] parsed as %#v but does not encode: %v", name, n, m, err)
				continue
			}
			if !bytes.Equal(re, p) {
				t.Errorf("%s[:%d] parsed as %#v, re-encodes to % x", name, n, m, re)
			}
		}
	}
}

// TestTypedParsersAgreeWithParse checks each typed parser on its own
// vectors and its refusal of another command.
func TestTypedParsersAgreeWithParse(t *testing.T) {
	parsers := map[string]func([]byte) (Message, error){
		"getInfo":      func(b []byte) (Message, error) { m, err := ParseGetInfo(b); return &m, err },
		"infoResponse": func(b []byte) (Message, error) { m, err := ParseInfoResponse(b); return &m, err },
		"getServers":   func(b []byte) (Message, error) { m, err := ParseGetServers(b); return &m, err },
		"servers":      func(b []byte) (Message, error) { m, err := ParseServers(b); return &m, err },
		"heartbeat":    func(b []byte) (Message, error) { m, err := ParseHeartbeat(b); return &m, err },
		"gameAuth":     func(b []byte) (Message, error) { m, err := ParseGameAuth(b); return &m, err },
		"authKey":      func(b []byte) (Message, error) { m, err := ParseAuthKey(b); return &m, err },
	}
	for name, b := range validPackets(t) {
		want, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		matched := 0
		for cmd, parse := range parsers {
			got, err := parse(b)
			if bytes.HasPrefix(b[2:], []byte(cmd+"\x00")) {
				matched++
				if err != nil {
					t.Errorf("%s: Parse%s: %v", name, cmd, err)
					continue
				}
				g, _ := got.AppendBinary(nil)
				w, _ := want.AppendBinary(nil)
				if !bytes.Equal(g, w) {
					t.Errorf("%s: Parse%s and Parse differ", name, cmd)
				}
			} else if !errors.Is(err, ErrUnknownCommand) {
				t.Errorf("%s: Parse%s on another command: %v, want ErrUnknownCommand", name, cmd, err)
			}
		}
		if matched != 1 {
			t.Errorf("%s: %d typed parsers matched", name, matched)
		}
	}
}
