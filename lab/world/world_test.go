package world

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func genSpec(seed uint64) Spec {
	mix, _ := ParseMix("q3a:50,et:30,css:20")
	return Spec{Servers: 3000, Games: mix, Full: 0.3, Empty: 0.4, RTTMin: 10 * time.Millisecond, RTTMax: 400 * time.Millisecond, Loss: 0.01, Seed: seed}
}

func TestGenerate_Deterministic(t *testing.T) {
	enc := func(seed uint64) string {
		w, err := Generate(genSpec(seed))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		w.Write(&b)
		return b.String()
	}
	if a, b := enc(7), enc(7); a != b {
		t.Error("the same seed gave two worlds")
	}
	if enc(7) == enc(8) {
		t.Error("two seeds gave the same world")
	}
}

func TestGenerate_Plausible(t *testing.T) {
	w, err := Generate(genSpec(11))
	if err != nil {
		t.Fatal(err)
	}
	games := map[Game]int{}
	full, empty := 0, 0
	hosts := map[netip.Addr]netip.Addr{}
	for _, s := range w.Servers {
		games[s.Game]++
		if !IsPublic(s.Public.Addr()) {
			t.Fatalf("%v is not public unicast", s.Public)
		}
		if reservedNet.Contains(s.Loopback.Addr()) || !s.Loopback.Addr().IsLoopback() || s.Loopback.Port() != s.Public.Port() {
			t.Fatalf("%v -> %v: want 127.1.0.0 and up, same port", s.Public, s.Loopback)
		}
		if lo, seen := hosts[s.Public.Addr()]; seen && lo != s.Loopback.Addr() {
			t.Fatalf("public host %v on two loopback hosts", s.Public.Addr())
		}
		hosts[s.Public.Addr()] = s.Loopback.Addr()
		if d := time.Duration(s.Link.RTT); d < 10*time.Millisecond || d > 400*time.Millisecond {
			t.Fatalf("rtt %v outside the range", d)
		}
		switch len(s.Players) {
		case s.MaxClients:
			full++
		case 0:
			empty++
		}
	}
	n := len(w.Servers)
	near := func(got, want int) bool { return got > want*85/100 && got < want*115/100 }
	if !near(games[Q3A], n/2) || !near(games[ET], n*3/10) || !near(games[CSS], n/5) || len(games) != 3 {
		t.Errorf("mix %v, want about 50/30/20 of %d", games, n)
	}
	if !near(full, n*3/10) || !near(empty, n*4/10) {
		t.Errorf("%d full, %d empty of %d; want about 30%% and 40%%", full, empty, n)
	}
	if len(hosts) >= n || len(hosts) < n/MaxServersPerHost {
		t.Errorf("%d hosts for %d servers: want several servers per host", len(hosts), n)
	}
	if _, err := w.Table(); err != nil {
		t.Errorf("table: %v", err)
	}
}

func TestIsPublic(t *testing.T) {
	for a, want := range map[string]bool{
		"81.169.12.34": true, "8.8.8.8": true, "1.1.1.1": true, "223.255.255.1": true,
		"10.1.2.3": false, "172.16.0.1": false, "172.31.255.255": false, "172.32.0.1": true, "192.168.1.1": false,
		"127.0.0.1": false, "100.64.0.1": false, "169.254.1.1": false, "192.0.2.1": false, "198.51.100.7": false,
		"203.0.113.9": false, "198.18.0.1": false, "224.0.0.1": false, "240.0.0.1": false, "255.255.255.255": false,
		"0.1.2.3": false, "::1": false, "2001:db8::1": false, "::ffff:8.8.8.8": true,
	} {
		if got := IsPublic(netip.MustParseAddr(a)); got != want {
			t.Errorf("IsPublic(%s) = %v, want %v", a, got, want)
		}
	}
}

func TestWorldFile_RoundTrip(t *testing.T) {
	w, err := Generate(Spec{Servers: 50, RTTMax: 50 * time.Millisecond, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := w.Write(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	back.Write(&b2)
	if b.String() != b2.String() {
		t.Error("write -> read -> write changed the file")
	}
}

func TestWorldFile_Refuses(t *testing.T) {
	good := `{"version":1,"servers":[{"public":"81.169.12.34:27960","loopback":"127.1.0.1:27960","game":"oa","hostname":"h","map":"m","max_clients":8,"link":{"rtt":"50ms"}}]}`
	if _, err := Read(strings.NewReader(good)); err != nil {
		t.Fatalf("good world refused: %v", err)
	}
	for name, bad := range map[string]string{
		"version 2":        strings.Replace(good, `"version":1`, `"version":2`, 1),
		"unknown field":    strings.Replace(good, `"map":"m"`, `"map":"m","colour":"red"`, 1),
		"private public":   strings.Replace(good, "81.169.12.34", "192.168.0.10", 1),
		"loopback public":  strings.Replace(good, "81.169.12.34", "127.0.0.5", 1),
		"off-loopback":     strings.Replace(good, "127.1.0.1", "10.0.0.1", 1),
		"reserved /16":     strings.Replace(good, "127.1.0.1", "127.0.0.1", 1),
		"unknown game":     strings.Replace(good, `"oa"`, `"quake2"`, 1),
		"backslash":        strings.Replace(good, `"hostname":"h"`, `"hostname":"a\\\\b"`, 1),
		"no slots":         strings.Replace(good, `"max_clients":8`, `"max_clients":0`, 1),
		"too many players": strings.Replace(good, `"max_clients":8`, `"max_clients":1,"players":[{"name":"a"},{"name":"b"}]`, 1),
		"loss above 1":     strings.Replace(good, `"rtt":"50ms"`, `"rtt":"50ms","loss":1.5`, 1),
		"negative rtt":     strings.Replace(good, `"rtt":"50ms"`, `"rtt":"-5ms"`, 1),
		"duplicate public": strings.Replace(good, `]}`, `,{"public":"81.169.12.34:27960","loopback":"127.1.0.2:27960","game":"oa","hostname":"h","map":"m","max_clients":8,"link":{"rtt":"5ms"}}]}`, 1),
	} {
		if _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name != "negative rtt" && name != "unknown field" && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestParseMixAndRange(t *testing.T) {
	m, err := ParseMix("q3a:50, et:30,css")
	if err != nil || m.String() != "q3a:50,et:30,css:1" {
		t.Errorf("ParseMix = %v, %v", m, err)
	}
	for _, bad := range []string{"", "quake2:5", "q3a:x", "q3a:1,q3a:2", "q3a:-1"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	if lo, hi, err := ParseRange("10ms-400ms"); err != nil || lo != 10*time.Millisecond || hi != 400*time.Millisecond {
		t.Errorf("ParseRange = %v %v %v", lo, hi, err)
	}
	if lo, hi, err := ParseRange("50ms"); err != nil || lo != hi {
		t.Errorf("ParseRange(one) = %v %v %v", lo, hi, err)
	}
	for _, bad := range []string{"400ms-10ms", "x", "1ms-20s", "-5ms"} {
		if _, _, err := ParseRange(bad); err == nil {
			t.Errorf("ParseRange(%q) accepted", bad)
		}
	}
}
