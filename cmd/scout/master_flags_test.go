package main

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

func TestParseArgs_DpmasterForms(t *testing.T) {
	for _, form := range [][]string{{"-n", "16"}, {"-n16"}, {"--max-servers", "16"}, {"--max-servers=16"}} {
		o, err := parseMasterArgs(form)
		if err != nil || o.MaxServers != 16 {
			t.Errorf("%q -> %d, %v", form, o.MaxServers, err)
		}
	}
	o, err := parseMasterArgs([]string{"-l", "127.0.0.1", "-l", "[::1]:5000", "--listen=0.0.0.0:7", "-v", "-N", "2",
		"-m", "127.0.0.1=203.0.113.1", "--game-policy", "accept", "Quake3Arena", "et", "-g", "et", "options-=send-full-servers",
		"protocols+=85", "-f", "--fp-throttle", "7", "--peer", "192.0.2.1", "--upstream", "192.0.2.2:27950"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1", "[::1]:5000", "0.0.0.0:7"}
	if !reflect.DeepEqual(o.Listen, want) || o.Verbose != 4 || o.MaxServersPerAddr != 2 || o.FPThrottle != 7 ||
		!reflect.DeepEqual(o.GamePolicy, [][]string{{"accept", "Quake3Arena", "et"}}) ||
		!reflect.DeepEqual(o.GameProperties, [][]string{{"et", "options-=send-full-servers", "protocols+=85"}}) ||
		*o.FloodProtection != true {
		t.Fatalf("%+v", o)
	}
	s, err := o.settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Listen[1] != netip.MustParseAddrPort("[::1]:5000") || s.Listen[0].Port() != masterd.DefaultPort || s.OptionalIPv6 {
		t.Fatalf("listen %v", s.Listen)
	}
	// -v with a level, attached or not; -v followed by another option.
	for _, tc := range []struct {
		args []string
		v    int
	}{{[]string{"-v", "2"}, 2}, {[]string{"-v0"}, 0}, {[]string{"--verbose=1"}, 1}, {[]string{"-v", "-n", "3"}, 4}} {
		o, err := parseMasterArgs(tc.args)
		if err != nil || o.Verbose != tc.v {
			t.Errorf("%q -> %d, %v", tc.args, o.Verbose, err)
		}
	}
	// dpmaster's pitfall: the first game-policy name is taken whatever it is.
	o, _ = parseMasterArgs([]string{"--game-policy", "accept", "-v", "-n", "200"})
	if !reflect.DeepEqual(o.GamePolicy, [][]string{{"accept", "-v"}}) || o.MaxServers != 200 {
		t.Fatalf("%+v", o)
	}
	if o, _ := parseMasterArgs([]string{"-g"}); !o.PrintGames {
		t.Fatal("bare -g does not print the games")
	}
	if o, _ := parseMasterArgs([]string{"-v", "0"}); func() bool { s, _ := o.settings(context.Background()); return !s.LogOff }() {
		t.Fatal("-v 0 does not silence")
	}
}

func TestParseArgs_Refusals(t *testing.T) {
	for _, args := range [][]string{
		{"-D"}, {"--daemon"}, {"-u", "nobody"}, {"-j", "/var/empty"}, {"-L"}, {"--log-file", "x"},
		{"-n"}, {"-n", "x"}, {"--bogus"}, {"stray"}, {"-v", "7"}, {"--game-policy", "accept"}, {"-f=1"},
		{"--log-format", "xml"}, {"-p", "70000"},
	} {
		if _, err := parseMasterArgs(args); !errors.Is(err, errMasterUsage) {
			t.Errorf("%q: err %v, want a usage error", args, err)
		}
	}
	if _, err := parseMasterArgs([]string{"-h"}); !errors.Is(err, errMasterHelp) {
		t.Error("-h")
	}
	if _, err := parseMasterArgs([]string{"-H", "10", "--cl-hash-size", "8"}); err != nil {
		t.Errorf("hash sizes: %v", err)
	}
	o, _ := parseMasterArgs([]string{"--hash-ports", "-N", "2"})
	if _, err := o.settings(context.Background()); !errors.Is(err, errMasterUsage) {
		t.Error("--hash-ports with -N accepted")
	}
}

func TestParseArgs_ConfigFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(p, []byte(`{"port": 27999, "max-servers": 5, "motd": "hi", "listen": ["127.0.0.1"]}`), 0o600)
	o, err := parseMasterArgs([]string{"--config", p, "-n", "9"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Port != 27999 || o.MaxServers != 9 || o.MOTD != "hi" || len(o.Listen) != 1 {
		t.Fatalf("%+v", o)
	}
	s, _ := o.settings(context.Background())
	if len(s.MOTDListen) != 1 || s.MOTDListen[0] != netip.MustParseAddrPort("127.0.0.1:27951") {
		t.Fatalf("motd listen %v", s.MOTDListen)
	}
	os.WriteFile(p, []byte(`{"prot": 1}`), 0o600)
	if _, err := parseMasterArgs([]string{"--config", p}); !errors.Is(err, errMasterUsage) {
		t.Fatal("unknown key accepted")
	}
}

func TestParseArgs_VerifyRetries(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int // Registry.VerifyRetries after masterSettings; -2: a usage error
	}{
		{nil, 0}, // the registry's default
		{[]string{"--verify-retries", "0"}, -1},
		{[]string{"--verify-retries=1"}, 1},
		{[]string{"--verify-retries", "2"}, 2},
		{[]string{"--verify-retries", "4"}, -2},
		{[]string{"--verify-retries", "-1"}, -2},
	} {
		o, err := parseMasterArgs(c.args)
		var s masterSettings
		if err == nil {
			s, err = o.settings(context.Background())
		}
		switch {
		case c.want == -2 && !errors.Is(err, errMasterUsage):
			t.Errorf("%q: err %v, want a usage error", c.args, err)
		case c.want != -2 && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != -2 && s.Registry.VerifyRetries != c.want:
			t.Errorf("%q: VerifyRetries %d, want %d", c.args, s.Registry.VerifyRetries, c.want)
		}
	}
}

// TestMaster_BadOptionValueExitsOne: as dpmaster (its test-suite's
// "maximum number of servers set to zero" expects exit value 1), a bad
// option or option value exits with status 1 and names the option; -h
// prints the usage and exits 0.
func TestMaster_BadOptionValueExitsOne(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "0"}, {"--max-servers=0"}, {"-N", "0"}, {"-p", "70000"}, {"--fp-throttle", "1"},
		{"-v", "7"}, {"--bogus"}, {"-D"}, {"--hash-ports", "-N", "2"}, {"-m", "nonsense"},
		{"--motd", "a\"b"}, {"--verify-retries", "9"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runMaster(context.Background(), args, &stdout, &stderr); code != 1 {
			t.Errorf("%q: exit %d, want 1 (stderr %q)", args, code, stderr.String())
		}
		if !strings.HasPrefix(stderr.String(), "scout master: usage: ") {
			t.Errorf("%q: stderr %q, want the usage error", args, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runMaster(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--max-servers") {
		t.Errorf("-h: exit %d, stdout %q", code, stdout.String())
	}
}

// dpmaster's flood-protection options keep dpmaster's meaning (a
// per-source throttle); without them the default defence is the response
// rate limiting; --no-flood-protection turns both off.
func TestMasterFlags_FloodProtectionIsDpmasters(t *testing.T) {
	for _, tc := range []struct {
		args             []string
		throttle, noneAt bool
	}{
		{nil, false, false},
		{[]string{"-f"}, true, false},
		{[]string{"--flood-protection"}, true, false},
		{[]string{"--fp-throttle", "7"}, true, false},
		{[]string{"--fp-decay-time=2"}, true, false},
		{[]string{"--no-flood-protection"}, false, true},
	} {
		o, err := parseMasterArgs(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		s, err := o.settings(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.SourceThrottle != tc.throttle || s.NoQueryLimit != tc.noneAt {
			t.Errorf("%q: source throttle %v, no query limit %v", tc.args, s.SourceThrottle, s.NoQueryLimit)
		}
	}
}

// --world-map publishes each loopback server of a world's table at its
// public address; a missing or broken file is a usage error.
func TestParseArgs_WorldMap(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "map.json")
	os.WriteFile(good, []byte(`{"version":1,"pairs":[{"public":"198.51.100.7:27960","loopback":"127.1.0.9:27960"}]}`+"\n"), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"pairs":[{"public":"127.0.0.2:1","loopback":"127.1.0.9:27960"}]}`), 0o600)
	o, err := parseMasterArgs([]string{"--allow-loopback", "--world-map", good})
	if err != nil {
		t.Fatal(err)
	}
	s, err := o.settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Registry.AddrMap.Map(netip.MustParseAddrPort("127.1.0.9:27960")); !ok || got.String() != "198.51.100.7:27960" {
		t.Errorf("127.1.0.9:27960 published as %v (%v), want 198.51.100.7:27960", got, ok)
	}
	for _, f := range []string{bad, filepath.Join(dir, "missing.json")} {
		o, err := parseMasterArgs([]string{"--world-map", f})
		if err == nil {
			_, err = o.settings(context.Background())
		}
		if !errors.Is(err, errMasterUsage) {
			t.Errorf("--world-map %s: err %v, want a usage error", f, err)
		}
	}
}

func TestParseArgs_StateOptions(t *testing.T) {
	for _, c := range []struct {
		args   []string
		commit time.Duration // 0: a usage error
		refuse bool
	}{
		{nil, masterd.DefaultCommitInterval, false},
		{[]string{"--commit-interval", "250"}, 250 * time.Millisecond, false},
		{[]string{"--commit-interval=1", "--refuse-damaged-state"}, time.Millisecond, true},
		{[]string{"--commit-interval", "0"}, 0, false},
		{[]string{"--commit-interval", "-5"}, 0, false},
		{[]string{"--commit-interval", "1s"}, 0, false},
		{[]string{"--refuse-damaged-state=yes"}, 0, false},
	} {
		o, err := parseMasterArgs(c.args)
		var s masterSettings
		if err == nil {
			s, err = o.settings(context.Background())
		}
		switch {
		case c.commit == 0 && !errors.Is(err, errMasterUsage):
			t.Errorf("%q: err %v, want a usage error", c.args, err)
		case c.commit != 0 && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.commit != 0 && (s.CommitInterval != c.commit || s.Refuse != c.refuse):
			t.Errorf("%q: CommitInterval %v, refuse %v; want %v, %v", c.args, s.CommitInterval, s.Refuse, c.commit, c.refuse)
		}
	}
	// And from a --config file, by their long names.
	path := filepath.Join(t.TempDir(), "master.json")
	os.WriteFile(path, []byte(`{"commit-interval": 40, "refuse-damaged-state": true}`), 0o600)
	o, err := parseMasterArgs([]string{"--config", path})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := o.settings(context.Background()); err != nil || s.CommitInterval != 40*time.Millisecond || !s.Refuse {
		t.Errorf("from --config: %v, %v, %v", s.CommitInterval, s.Refuse, err)
	}
	os.WriteFile(path, []byte(`{"commit-interval": -5}`), 0o600)
	if o, err = parseMasterArgs([]string{"--config", path}); err == nil {
		_, err = o.settings(context.Background())
	}
	if !errors.Is(err, errMasterUsage) {
		t.Errorf("commit-interval -5 from --config: err %v, want a usage error", err)
	}
}

// The response limit's lanes are set from the command line; unset, they
// are the master's defaults.
func TestMasterFlags_ResponseLimits(t *testing.T) {
	o, err := parseMasterArgs([]string{"--victim-rate", "100000", "--victim-burst=4000000", "--return-rate", "200000", "--return-burst", "500000"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := o.settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := master.ResponseLimits{VictimRate: 100000, VictimBurst: 4000000, ReturnRate: 200000, ReturnBurst: 500000}
	if s.Responses != want || s.SourceThrottle {
		t.Fatalf("responses %+v, source throttle %v", s.Responses, s.SourceThrottle)
	}
	if _, err := parseMasterArgs([]string{"--victim-rate", "0"}); err == nil {
		t.Error("--victim-rate 0 accepted")
	}
}
