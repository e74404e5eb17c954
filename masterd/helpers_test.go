package masterd

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// t0 is an arbitrary instant.
var t0 = time.Unix(1_800_000_000, 0)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// listQ3 registers an OpenArena 0.8.8 server (hostname oa-peer-28960) at
// a through h: heartbeat, getinfo, infoResponse.
func listQ3(t testing.TB, h *master.Handler, now time.Time, a netip.AddrPort) {
	t.Helper()
	hb, _ := q3.Heartbeat{Tag: "QuakeArena-1"}.AppendBinary(nil)
	challenge := ""
	for _, o := range h.HandlePacket(now, a, hb, nil) {
		if m, err := q3.Parse(o.Payload); err == nil {
			if gi, ok := m.(q3.GetInfo); ok && o.To == a {
				challenge = gi.Challenge
			}
		}
	}
	if challenge == "" {
		t.Fatalf("%v: no getinfo", a)
	}
	info, err := q3.InfoResponse{Info: infostring.Info{
		{Key: "challenge", Value: challenge}, {Key: "protocol", Value: "71"}, {Key: "gamename", Value: "Quake3Arena"},
		{Key: "hostname", Value: "oa-peer-28960"}, {Key: "mapname", Value: "oa_dm1"},
		{Key: "clients", Value: "3"}, {Key: "sv_maxclients", Value: "8"}, {Key: "gametype", Value: "0"},
	}}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.HandlePacket(now, a, info, nil)
	if s, ok := h.Registry().Lookup(a); !ok || !s.Listed {
		t.Fatalf("%v not listed", a)
	}
}

// startMaster makes a master of cfg, opens its sockets and runs it until
// stop, which also closes it.
func startMaster(tb testing.TB, cfg Config) (m *Master, stop func()) {
	tb.Helper()
	m, err := NewMaster(time.Now(), cfg, Deps{})
	if err != nil {
		tb.Fatal(err)
	}
	return m, runMaster(tb, m)
}

// runMaster opens m's sockets and runs it until stop, which also closes
// it.
func runMaster(tb testing.TB, m *Master) (stop func()) {
	tb.Helper()
	if err := m.Listen(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	return func() { cancel(); <-ran; m.Close() }
}
