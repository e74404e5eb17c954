package master

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

func TestRegistry_GametypeFilters(t *testing.T) {
	r := newTestRegistry(t, Config{})
	ffaEmpty := register(t, r, t0, ap("198.51.100.1:27960"), "gametype", "0", "clients", "0")
	ffaBusy := register(t, r, t0, ap("198.51.100.2:27960"), "gametype", "0", "clients", "3")
	ctfFull := register(t, r, t0, ap("198.51.100.3:27960"), "gametype", "4", "clients", "8")
	tdmBusy := register(t, r, t0, ap("198.51.100.4:27960"), "gametype", "3", "clients", "1")
	sorted := func(q Query) []netip.AddrPort {
		got := selectAll(r, t0, q)
		slices.SortFunc(got, netip.AddrPort.Compare)
		return got
	}
	ctf, _ := GametypeShortcut("ctf")
	team, _ := GametypeShortcut("team")
	for _, c := range []struct {
		name string
		q    Query
		want []Server
	}{
		{"getservers 71", Query{Family: game.FamilyQ3, Protocol: 71}, []Server{ffaBusy, tdmBusy}},
		{"empty", Query{Family: game.FamilyQ3, Protocol: 71, Empty: true}, []Server{ffaEmpty, ffaBusy, tdmBusy}},
		{"full", Query{Family: game.FamilyQ3, Protocol: 71, Full: true}, []Server{ffaBusy, ctfFull, tdmBusy}},
		{"empty full", q71, []Server{ffaEmpty, ffaBusy, ctfFull, tdmBusy}},
		{"ctf full", Query{Family: game.FamilyQ3, Protocol: 71, Full: true, Gametype: ctf, HasGametype: true}, []Server{ctfFull}},
		{"team", Query{Family: game.FamilyQ3, Protocol: 71, Gametype: team, HasGametype: true}, []Server{tdmBusy}},
		{"gametype=0 empty", Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Gametype: "0", HasGametype: true}, []Server{ffaEmpty, ffaBusy}},
		{"other protocol", Query{Family: game.FamilyQ3, Protocol: 68, Empty: true, Full: true}, nil},
		{"ipv6 only", Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Full: true, IPv6: true}, nil},
	} {
		var want []netip.AddrPort
		for _, s := range c.want {
			want = append(want, s.Addr)
		}
		if got := sorted(c.q); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}
}

func TestRegistry_ETAlwaysGetsEmptyAndFull(t *testing.T) {
	r := newTestRegistry(t, Config{})
	for i, clients := range []string{"0", "8", "3"} {
		a := ap(fmt.Sprintf("198.51.100.%d:27960", i+1))
		p, _ := r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"})
		if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84", "clients", clients)); why != OK {
			t.Fatal(why)
		}
	}
	if got := selectAll(r, t0, Query{Family: game.FamilyQ3, Protocol: 84}); len(got) != 3 {
		t.Errorf("getservers 84 = %v", got)
	}
}

func TestRegistry_IPv6(t *testing.T) {
	r := newTestRegistry(t, Config{})
	v4 := register(t, r, t0, ap("198.51.100.1:27960"))
	v6 := register(t, r, t0, ap("[2001:db8::1]:27960"))
	for _, c := range []struct {
		q    Query
		want []netip.AddrPort
	}{
		{Query{Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, Empty: true, Full: true}, []netip.AddrPort{v4.Addr, v6.Addr}},
		{Query{Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, IPv4: true}, []netip.AddrPort{v4.Addr}},
		{Query{Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, IPv6: true}, []netip.AddrPort{v6.Addr}},
	} {
		got := selectAll(r, t0, c.q)
		slices.SortFunc(got, netip.AddrPort.Compare)
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.q, got, c.want)
		}
	}
}

func TestRegistry_FairRotation(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServersPerAddress: -1})
	const n = 50
	for i := range n {
		register(t, r, t0, ap(fmt.Sprintf("198.51.100.%d:27960", i+1)))
	}
	first := map[netip.AddrPort]int{}
	last := map[netip.AddrPort]int{}
	var prevStart netip.AddrPort
	for q := 0; q < n; q++ {
		got := selectAll(r, t0, q71)
		if len(got) != n {
			t.Fatalf("got %d servers", len(got))
		}
		first[got[0]]++
		last[got[n-1]]++
		if got[0] == prevStart {
			t.Errorf("query %d starts where the previous did", q)
		}
		prevStart = got[0]
	}
	if len(first) != n || len(last) != n {
		t.Errorf("over %d queries, %d distinct first and %d distinct last servers; want %d each", n, len(first), len(last), n)
	}
}

func TestRegistry_SelectSkipsExpiredBeforeExpireRuns(t *testing.T) {
	r := newTestRegistry(t, Config{})
	register(t, r, t0, ap("198.51.100.7:27960"))
	if got := selectAll(r, t0.Add(DefaultTimeout-time.Nanosecond), q71); len(got) != 1 {
		t.Errorf("before timeout: %v", got)
	}
	if got := selectAll(r, t0.Add(DefaultTimeout), q71); len(got) != 0 {
		t.Errorf("at timeout: %v", got)
	}
}

func TestRegistry_SelectAllocs(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServersPerAddress: -1})
	for i := range 200 {
		register(t, r, t0, ap(fmt.Sprintf("198.51.%d.%d:27960", i/250, i%250+1)))
	}
	dst := make([]netip.AddrPort, 0, 256)
	r.Select(t0, q71, dst)
	if n := testing.AllocsPerRun(100, func() { r.Select(t0, q71, dst[:0]) }); n != 0 {
		t.Errorf("Select allocates %v times", n)
	}
}
