package main

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/master/upstream"
)

// TestMasterFlags_Aggregate: --aggregate's words become the queries scout
// servers --game sends, one query each, with getserversExt after 'ext'.
func TestMasterFlags_Aggregate(t *testing.T) {
	s, err := parseMaster(t.Context(), []string{
		"--aggregate", "8.8.4.4", "q3", "et:82", "ext", "Xonotic", "name=dp",
		"--aggregate", "8.8.8.8:27650", "q4:2.85",
		"--scout-peer", "http://8.8.4.4:8080/",
	})
	if err != nil {
		t.Fatal(err)
	}
	srcs := s.Config.Handler.Aggregate.Sources
	if len(srcs) != 3 {
		t.Fatalf("sources %+v", srcs)
	}
	dp := srcs[0]
	var qs []string
	for _, q := range dp.Queries {
		qs = append(qs, q.String())
	}
	want := "getservers 68 empty full|getservers 71 empty full|getservers 82 empty full|getserversExt Xonotic 3 empty full"
	if dp.Name != "dp" || dp.Addr != netip.MustParseAddrPort("8.8.4.4:27950") || strings.Join(qs, "|") != want {
		t.Fatalf("source %q %v: %q", dp.Name, dp.Addr, qs)
	}
	if q4 := srcs[1]; q4.Queries[0].Family != game.FamilyDoom3 || q4.Queries[0].Q4.Protocol.Uint32() != 0x20055 || q4.Addr.Port() != 27650 {
		t.Fatalf("q4 source %+v", q4)
	}
	if p := srcs[2]; p.Kind != upstream.KindPeer || p.URL != "http://8.8.4.4:8080" || p.Addr != netip.MustParseAddrPort("8.8.4.4:8080") {
		t.Fatalf("peer %+v", p)
	}
}

func TestMasterFlags_AggregateRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--aggregate", "8.8.4.4"},
		{"--aggregate", "8.8.4.4", "ext"},
		{"--aggregate", "8.8.4.4", "nosuchgame"},
		{"--aggregate", "8.8.4.4", "css"},
		{"--aggregate", "8.8.4.4", "et:x"},
		{"--scout-peer", "ftp://8.8.4.4"},
		{"--scout-peer", "http://8.8.4.4:8080/api"},
		{"--block", "93.184.0.0/24"},
		{"--block", "nonsense padding"},
		{"--aggregate-interval", "1"},
	} {
		if _, err := parseMaster(t.Context(), args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestMasterFlags_Block(t *testing.T) {
	for in, want := range map[string]string{
		"93.184.0.0/24 clones on 500 ports": "93.184.0.0/24",
		"93.184.0.7 fake players":           "93.184.0.7/32",
		"2001:db8::/32   spoofed bots  ":    "2001:db8::/32",
	} {
		b, err := parseBlock(in)
		if err != nil || b.Prefix.String() != want || b.Reason == "" || strings.HasSuffix(b.Reason, " ") {
			t.Errorf("%q: %+v, %v", in, b, err)
		}
	}
}

func FuzzParseBlock(f *testing.F) {
	f.Add("93.184.0.0/24 clones on 500 ports")
	f.Add("::ffff:1.2.3.4 x")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseBlock(s)
		if err == nil && (!b.Prefix.IsValid() || b.Reason == "" || strings.ContainsAny(b.Reason, "\n\x00")) {
			t.Fatalf("%q accepted as %+v", s, b)
		}
	})
}

func FuzzAggregateQueries(f *testing.F) {
	for _, w := range []string{"q3", "et:84", "q4:2.85", "OpenArena:71", "Xonotic", "q4:131157"} {
		f.Add(w, false)
	}
	f.Fuzz(func(t *testing.T, w string, ext bool) {
		qs, err := aggregateQueries(w, ext)
		if err != nil {
			return
		}
		for _, q := range qs {
			if _, err := upstream.New(time.Time{}, upstream.Config{Sources: []upstream.Source{{Name: "m", Addr: netip.MustParseAddrPort("8.8.4.4:27950"), Queries: []upstream.Query{q}}}}, 1); err != nil {
				t.Fatalf("%q gave a query the aggregator refuses: %v", w, err)
			}
		}
	})
}

// TestMasterConfig_AggregateExample: docs/aggregate.json, the ready
// configuration for the public masters, is a --config file scout master
// reads, and every upstream's words are queries it sends (the host names
// are resolved at start, not here).
func TestMasterConfig_AggregateExample(t *testing.T) {
	a, err := parseMasterArgs([]string{"--config", filepath.Join(peer.ModuleRoot(t), "docs", "aggregate.json")})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.aggregate) < 10 {
		t.Fatalf("%d upstreams", len(a.aggregate))
	}
	for _, words := range a.aggregate {
		ext, n := false, 0
		for _, w := range words[1:] {
			if w == "ext" {
				ext = true
				continue
			}
			qs, err := aggregateQueries(w, ext)
			if err != nil {
				t.Errorf("%s: %v", words[0], err)
			}
			n += len(qs)
		}
		if n == 0 {
			t.Errorf("%s: no query", words[0])
		}
	}
}
