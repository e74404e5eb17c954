package master

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// t0 is an arbitrary epoch-aligned instant.
var t0 = time.Unix(1_800_000_000, 0)

// zeroRand is a deterministic secret source for tests: secrets differ per
// rotation because each read continues the counter.
type countRand struct{ n byte }

func (c *countRand) Read(p []byte) (int, error) {
	for i := range p {
		c.n++
		p[i] = c.n
	}
	return len(p), nil
}

func newTestRegistry(t testing.TB, cfg Config) *Registry {
	t.Helper()
	ch, err := NewChallenger(DefaultRotationPeriod, &countRand{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(cfg, ch)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

var q3hb = Heartbeat{Family: game.FamilyQ3, Tag: "QuakeArena-1"}

// infoReply is the OpenArena 0.8.8 infoResponse (vector
// openarena_infoResponse.hex) with the challenge replaced.
func infoReply(challenge string, kv ...string) Reply {
	info := []Pair{
		{"voip", "opus"}, {"g_needpass", "0"}, {"pure", "1"}, {"gametype", "0"},
		{"sv_maxclients", "8"}, {"g_humanplayers", "0"}, {"clients", "3"},
		{"mapname", "oa_dm1"}, {"hostname", "oa-peer-28960"}, {"protocol", "71"},
		{"gamename", "Quake3Arena"}, {"challenge", challenge},
	}
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for j := range info {
			if info[j].Key == kv[i] {
				info[j].Value, found = kv[i+1], true
			}
		}
		if kv[i+1] == "\x00delete" {
			for j := range info {
				if info[j].Key == kv[i] {
					info = append(info[:j], info[j+1:]...)
					break
				}
			}
			continue
		}
		if !found {
			info = append(info, Pair{kv[i], kv[i+1]})
		}
	}
	return Reply{Kind: ReplyInfo, Info: info, Players: -1}
}

// register lists a Q3A server at a and returns it.
func register(t testing.TB, r *Registry, now time.Time, a netip.AddrPort, kv ...string) Server {
	t.Helper()
	p, why := r.Heartbeat(now, a, q3hb)
	if why != OK {
		t.Fatalf("Heartbeat(%v) = %v", a, why)
	}
	s, ch, why := r.Verify(now, a, infoReply(p.Challenge.Text, kv...))
	if why != OK || ch != ChangeListed {
		t.Fatalf("Verify(%v) = %v, %v", a, ch, why)
	}
	return s
}

var _ = bytes.Equal
