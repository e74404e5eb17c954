package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

func TestParseArgs_DpmasterForms(t *testing.T) {
	for _, form := range [][]string{{"-n", "16"}, {"-n16"}, {"--max-servers", "16"}, {"--max-servers=16"}} {
		s, err := parseMaster(t.Context(), form)
		if err != nil || s.Config.Registry.MaxServers != 16 {
			t.Errorf("%q -> %d, %v", form, s.Config.Registry.MaxServers, err)
		}
	}
	s, err := parseMaster(t.Context(), []string{"-l", "127.0.0.1", "-l", "[::1]:5000", "--listen=0.0.0.0:7", "-v", "-N", "2",
		"-m", "127.0.0.1=203.0.113.1", "--game-policy", "accept", "Quake3Arena", "et", "-g", "et", "options-=send-full-servers",
		"protocols+=85", "-f", "--fp-throttle", "7", "--peer", "192.0.2.1", "--upstream", "192.0.2.2:27950"})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:27950"), netip.MustParseAddrPort("[::1]:5000"), netip.MustParseAddrPort("0.0.0.0:7")}
	if !reflect.DeepEqual(c.Listen, want) || c.OptionalIPv6 || s.LogLevel != slog.LevelDebug || c.Registry.MaxServersPerAddress != 2 ||
		c.Queries.Throttle != 7 || !c.SourceThrottle || c.Registry.Policy.Accepts("Quake3Arena") != true || c.Registry.Policy.Accepts("Xonotic") ||
		!etProtocol(c, 85) ||
		!reflect.DeepEqual(c.Handler.Peers, []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:0")}) ||
		!reflect.DeepEqual(c.Handler.Upstreams, []netip.AddrPort{netip.MustParseAddrPort("192.0.2.2:27950")}) {
		t.Fatalf("%+v", s)
	}
	// -v with a level, attached or not; -v followed by another option.
	for _, tc := range []struct {
		args  []string
		level slog.Level
		off   bool
	}{{[]string{"-v", "2"}, slog.LevelWarn, false}, {[]string{"-v0"}, slog.LevelInfo, true}, {[]string{"--verbose=1"}, slog.LevelError, false},
		{[]string{"-v", "-n", "3"}, slog.LevelDebug, false}, {nil, slog.LevelInfo, false}} {
		s, err := parseMaster(t.Context(), tc.args)
		if err != nil || s.LogLevel != tc.level || s.LogOff != tc.off {
			t.Errorf("%q -> %v off %v, %v", tc.args, s.LogLevel, s.LogOff, err)
		}
	}
	// dpmaster's pitfall: the first game-policy name is taken whatever it is.
	s, _ = parseMaster(t.Context(), []string{"--game-policy", "accept", "-v", "-n", "200"})
	if !s.Config.Registry.Policy.Accepts("-v") || s.Config.Registry.Policy.Accepts("et") || s.Config.Registry.MaxServers != 200 {
		t.Fatalf("%+v", s)
	}
	if s, _ := parseMaster(t.Context(), []string{"-g"}); !s.PrintGames {
		t.Fatal("bare -g does not print the games")
	}
}

// etProtocol reports whether c's catalogue gives Enemy Territory protocol p.
func etProtocol(c masterd.Config, p int) bool {
	g, ok := c.Registry.Catalogue.ByName("et")
	return ok && slices.Contains(g.Protocols, p)
}

func TestParseArgs_Refusals(t *testing.T) {
	for _, args := range [][]string{
		{"-D"}, {"--daemon"}, {"-u", "root"}, {"-j", "/var/empty"}, {"-u", "no-such-user-scout"}, {"-L"}, {"--log-file", "x"},
		{"-n"}, {"-n", "x"}, {"--bogus"}, {"stray"}, {"-v", "7"}, {"--game-policy", "accept"}, {"-f=1"},
		{"--log-format", "xml"}, {"-p", "70000"}, {"--hash-ports", "-N", "2"},
	} {
		if _, err := parseMaster(t.Context(), args); !errors.Is(err, errMasterUsage) {
			t.Errorf("%q: err %v, want a usage error", args, err)
		}
	}
	if _, err := parseMaster(t.Context(), []string{"-h"}); !errors.Is(err, errMasterHelp) {
		t.Error("-h")
	}
	if _, err := parseMaster(t.Context(), []string{"-H", "10", "--cl-hash-size", "8"}); err != nil {
		t.Errorf("hash sizes: %v", err)
	}
}

// writeConfig writes a --config file of text and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "master.json")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseArgs_ConfigFile(t *testing.T) {
	p := writeConfig(t, `{"port": 27999, "max-servers": 5, "motd": "hi", "listen": ["127.0.0.1"]}`)
	s, err := parseMaster(t.Context(), []string{"--config", p, "-n", "9"})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if c.Registry.MaxServers != 9 || c.Handler.MOTD != "hi" || !reflect.DeepEqual(c.Listen, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:27999")}) {
		t.Fatalf("%+v", c)
	}
	if len(c.MOTDListen) != 1 || c.MOTDListen[0] != netip.MustParseAddrPort("127.0.0.1:27951") {
		t.Fatalf("motd listen %v", c.MOTDListen)
	}
}

// TestMasterConfig_FileEqualsFlags: a --config file and the command line
// that says the same build the same masterd.Config (and the same state
// file, fleet and log settings); between them the files hold every
// option a file may hold, so none escapes the check.
func TestMasterConfig_FileEqualsFlags(t *testing.T) {
	world := writeConfig(t, `{"version":1,"pairs":[{"public":"198.51.100.7:27960","loopback":"127.1.0.9:27960"}]}`)
	cases := []struct {
		file  string
		flags []string
	}{{`{
		"port": 27999, "listen": ["127.0.0.1", "[::1]:5000"], "max-servers": 100, "max-pending": 50,
		"max-servers-per-addr": 4, "flood-protection": true, "fp-throttle": 6, "fp-decay-time": 2, "max-clients": 99,
		"game-policy": [["reject", "Xonotic", "Nexuiz"]], "game-properties": [["et", "protocols+=85"], ["q3a", "reprobe=30s"]],
		"list-loopback": true, "map": ["127.0.0.2=203.0.113.1"], "world-map": "` + world + `", "verbose": 2,
		"state": "/var/lib/scout/master.db", "commit-interval": 250, "refuse-damaged-state": true, "no-player-sightings": true,
		"http": "127.0.0.1:8080", "http-rate": 5, "http-burst": 20, "http-max-rate": 0,
		"landmark-place": "Frankfurt", "landmark-id": "fra-1", "landmark-address": "192.0.2.1:27950",
		"landmark-peer": ["nyc=198.51.100.9:27950"], "motd": "hello", "motd-port": 27960,
		"peer": ["192.0.2.5"], "upstream": ["192.0.2.6"], "log-format": "json", "timeout": 600,
		"max-packet-bytes": 1200, "entries-per-packet": 112, "eot-last-only": true, "out-rate": 5000000,
		"out-burst": 600000, "read-buffer": 1048576, "victim-rate": 20000, "victim-burst": 800000,
		"return-rate": 40000, "return-burst": 150000, "hb-throttle": 10, "hb-decay-time": 3, "verify-retries": 0,
		"hash-size": 10, "cl-hash-size": 8, "user": "65534:65534", "jail-path": "/var/empty",
		"prefix4": "22,12", "prefix6": "60,44", "net-rate": 1000, "net-burst": 2000, "net-return-rate": 3000,
		"net-return-burst": 4000, "wide-rate": 5000, "wide-burst": 6000, "wide-return-rate": 7000, "wide-return-burst": 8000,
		"max-pace": 9, "cookie-rate": 10000, "cookie-burst": 11000, "no-cookies": true,
		"http-max-conns": 100, "http-max-conns-per-client": 8, "http-read-timeout": 3, "http-write-timeout": 20, "http-idle-timeout": 7
	}`, []string{
		"-p", "27999", "-l", "127.0.0.1", "-l", "[::1]:5000", "-n", "100", "--max-pending", "50",
		"-N", "4", "-f", "--fp-throttle", "6", "--fp-decay-time", "2", "--max-clients", "99",
		"--game-policy", "reject", "Xonotic", "Nexuiz", "-g", "et", "protocols+=85", "-g", "q3a", "reprobe=30s",
		"--list-loopback", "-m", "127.0.0.2=203.0.113.1", "--world-map", world, "-v", "2",
		"--state", "/var/lib/scout/master.db", "--commit-interval", "250", "--refuse-damaged-state", "--no-player-sightings",
		"--http", "127.0.0.1:8080", "--http-rate", "5", "--http-burst", "20", "--http-max-rate", "0",
		"--landmark-place", "Frankfurt", "--landmark-id", "fra-1", "--landmark-address", "192.0.2.1:27950",
		"--landmark-peer", "nyc=198.51.100.9:27950", "--motd", "hello", "--motd-port", "27960",
		"--peer", "192.0.2.5", "--upstream", "192.0.2.6", "--log-format", "json", "--timeout", "600",
		"--max-packet-bytes", "1200", "--entries-per-packet", "112", "--eot-last-only", "--out-rate", "5000000",
		"--out-burst", "600000", "--read-buffer", "1048576", "--victim-rate", "20000", "--victim-burst", "800000",
		"--return-rate", "40000", "--return-burst", "150000", "--hb-throttle", "10", "--hb-decay-time", "3", "--verify-retries", "0",
		"-H", "10", "--cl-hash-size", "8", "-u", "65534:65534", "-j", "/var/empty",
		"--prefix4", "22,12", "--prefix6", "60,44", "--net-rate", "1000", "--net-burst", "2000", "--net-return-rate", "3000",
		"--net-return-burst", "4000", "--wide-rate", "5000", "--wide-burst", "6000", "--wide-return-rate", "7000", "--wide-return-burst", "8000",
		"--max-pace", "9", "--cookie-rate", "10000", "--cookie-burst", "11000", "--no-cookies",
		"--http-max-conns", "100", "--http-max-conns-per-client", "8", "--http-read-timeout", "3", "--http-write-timeout", "20", "--http-idle-timeout", "7",
	}}, {
		// The options that exclude some of the above.
		`{"store": "redis://127.0.0.1:1/0", "fleet-id": "fra-1", "hash-ports": true, "http-no-limit": true,
		  "no-flood-protection": true, "eot-on-every": true, "flood-protection": false}`,
		[]string{"--store", "redis://127.0.0.1:1/0", "--fleet-id", "fra-1", "--hash-ports", "--http-no-limit",
			"--no-flood-protection", "--eot-on-every"},
	}, {
		// The other masters and the block list.
		`{"aggregate": [["8.8.4.4", "q3", "et", "name=deathmask"], ["8.8.8.8:27650", "q4"]],
		  "scout-peer": ["http://8.8.4.4:8080"], "aggregate-interval": 120, "aggregate-max-servers": 5000,
		  "aggregate-max-entries": 6000, "aggregate-checks": 100, "block": ["93.184.0.0/24 clones on 500 ports"],
		  "one-per-clone-group": true}`,
		[]string{"--aggregate", "8.8.4.4", "q3", "et", "name=deathmask", "--aggregate", "8.8.8.8:27650", "q4",
			"--scout-peer", "http://8.8.4.4:8080", "--aggregate-interval", "120", "--aggregate-max-servers", "5000",
			"--aggregate-max-entries", "6000", "--aggregate-checks", "100", "--block", "93.184.0.0/24 clones on 500 ports",
			"--one-per-clone-group"},
	}}
	keys := map[string]bool{}
	for _, c := range cases {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.file), &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			keys[k] = true
		}
		fromFile, err := parseMaster(t.Context(), []string{"--config", writeConfig(t, c.file)})
		if err != nil {
			t.Fatal(err)
		}
		fromFlags, err := parseMaster(t.Context(), c.flags)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromFile, fromFlags) {
			t.Errorf("from the file:\n%+v\nfrom the flags:\n%+v", fromFile, fromFlags)
		}
		// And a master is built from it.
		fromFile.Config.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
		if _, err := masterd.NewMaster(time.Now(), fromFile.Config, masterd.Deps{}); err != nil {
			t.Errorf("masterd.NewMaster: %v", err)
		}
	}
	for _, spec := range masterOptionSpecs {
		if spec.file != fileNone && spec.file != fileRefused && spec.help != "" && !keys[spec.long] {
			t.Errorf("%q is in no file of the test", spec.long)
		}
	}
}

// TestMasterConfig_UnknownKeyRefused: a --config file with a key that is
// no option, an option of the command line alone, or a value of the
// wrong type is a usage error that names it.
func TestMasterConfig_UnknownKeyRefused(t *testing.T) {
	for _, c := range []struct{ text, names string }{
		{`{"prot": 1}`, `"prot"`},
		{`{"config": "other.json"}`, `"config"`},
		{`{"help": true}`, `"help"`},
		{`{"max-servers": "16"}`, "max-servers"},
		{`{"listen": "127.0.0.1"}`, "listen"},
		{`{"game-policy": [["accept"]]}`, "game-policy"},
		{`{"daemon": true}`, "daemon"},
		{`{"max-servers": 0.5}`, "max-servers"},
		{`[1]`, "JSON object"},
		{`{"max-servers": 5} {}`, "more after"},
	} {
		_, err := parseMaster(t.Context(), []string{"--config", writeConfig(t, c.text)})
		if !errors.Is(err, errMasterUsage) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: err %v, want a usage error naming %s", c.text, err, c.names)
		}
	}
}

// Files written for earlier versions keep their meaning: --allow-loopback's
// old key, and 0 for an option that takes no 0 on the command line means
// its default.
func TestMasterConfig_OldKeys(t *testing.T) {
	s, err := parseMaster(t.Context(), []string{"--config", writeConfig(t, `{"allow-loopback": true, "timeout": 0, "max-servers": 0, "verbose": 3, "flood-protection": false}`)})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if !c.Registry.AllowLoopback || c.Registry.Timeout != 0 || c.Registry.MaxServers != 0 || !c.NoQueryLimit || s.LogLevel != slog.LevelInfo {
		t.Errorf("%+v", s)
	}
	if s, err := parseMaster(t.Context(), []string{"--allow-loopback"}); err != nil || !s.Config.Registry.AllowLoopback {
		t.Errorf("--allow-loopback: %v", err)
	}
}

func TestParseArgs_VerifyRetries(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int // Registry.VerifyRetries; -2: a usage error
	}{
		{nil, 0}, // the registry's default
		{[]string{"--verify-retries", "0"}, -1},
		{[]string{"--verify-retries=1"}, 1},
		{[]string{"--verify-retries", "2"}, 2},
		{[]string{"--verify-retries", "4"}, -2},
		{[]string{"--verify-retries", "-1"}, -2},
	} {
		s, err := parseMaster(t.Context(), c.args)
		switch {
		case c.want == -2 && !errors.Is(err, errMasterUsage):
			t.Errorf("%q: err %v, want a usage error", c.args, err)
		case c.want != -2 && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != -2 && s.Config.Registry.VerifyRetries != c.want:
			t.Errorf("%q: VerifyRetries %d, want %d", c.args, s.Config.Registry.VerifyRetries, c.want)
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
		s, err := parseMaster(t.Context(), tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if s.Config.SourceThrottle != tc.throttle || s.Config.NoQueryLimit != tc.noneAt {
			t.Errorf("%q: source throttle %v, no query limit %v", tc.args, s.Config.SourceThrottle, s.Config.NoQueryLimit)
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
	s, err := parseMaster(t.Context(), []string{"--list-loopback", "--world-map", good})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Config.Registry.AddrMap.Map(netip.MustParseAddrPort("127.1.0.9:27960")); !ok || got.String() != "198.51.100.7:27960" {
		t.Errorf("127.1.0.9:27960 published as %v (%v), want 198.51.100.7:27960", got, ok)
	}
	for _, f := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := parseMaster(t.Context(), []string{"--world-map", f}); !errors.Is(err, errMasterUsage) {
			t.Errorf("--world-map %s: err %v, want a usage error", f, err)
		}
	}
}

func TestParseArgs_StateOptions(t *testing.T) {
	for _, c := range []struct {
		args   []string
		commit time.Duration // -1: a usage error; 0: the master's default
		refuse bool
	}{
		{nil, 0, false},
		{[]string{"--commit-interval", "250"}, 250 * time.Millisecond, false},
		{[]string{"--commit-interval=1", "--refuse-damaged-state"}, time.Millisecond, true},
		{[]string{"--commit-interval", "0"}, -1, false},
		{[]string{"--commit-interval", "-5"}, -1, false},
		{[]string{"--commit-interval", "1s"}, -1, false},
		{[]string{"--refuse-damaged-state=yes"}, -1, false},
	} {
		s, err := parseMaster(t.Context(), c.args)
		switch {
		case c.commit == -1 && !errors.Is(err, errMasterUsage):
			t.Errorf("%q: err %v, want a usage error", c.args, err)
		case c.commit != -1 && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.commit != -1 && (s.Config.CommitInterval != c.commit || s.RefuseDamaged != c.refuse):
			t.Errorf("%q: CommitInterval %v, refuse %v; want %v, %v", c.args, s.Config.CommitInterval, s.RefuseDamaged, c.commit, c.refuse)
		}
	}
	// And from a --config file, by their long names.
	s, err := parseMaster(t.Context(), []string{"--config", writeConfig(t, `{"commit-interval": 40, "refuse-damaged-state": true}`)})
	if err != nil || s.Config.CommitInterval != 40*time.Millisecond || !s.RefuseDamaged {
		t.Errorf("from --config: %v, %v, %v", s.Config.CommitInterval, s.RefuseDamaged, err)
	}
	if _, err := parseMaster(t.Context(), []string{"--config", writeConfig(t, `{"commit-interval": -5}`)}); !errors.Is(err, errMasterUsage) {
		t.Errorf("commit-interval -5 from --config: err %v, want a usage error", err)
	}
}

// The response limit's lanes are set from the command line; unset, they
// are the master's defaults.
func TestMasterFlags_ResponseLimits(t *testing.T) {
	s, err := parseMaster(t.Context(), []string{"--victim-rate", "100000", "--victim-burst=4000000", "--return-rate", "200000", "--return-burst", "500000"})
	if err != nil {
		t.Fatal(err)
	}
	want := master.ResponseLimits{VictimRate: 100000, VictimBurst: 4000000, ReturnRate: 200000, ReturnBurst: 500000}
	if s.Config.Responses != want || s.Config.SourceThrottle {
		t.Fatalf("responses %+v, source throttle %v", s.Config.Responses, s.Config.SourceThrottle)
	}
	if _, err := parseMaster(t.Context(), []string{"--victim-rate", "0"}); err == nil {
		t.Error("--victim-rate 0 accepted")
	}
	s, err = parseMaster(t.Context(), []string{"--prefix4", "22,12", "--prefix6", "60,44", "--net-rate", "1000", "--net-burst", "2000",
		"--net-return-rate", "3000", "--net-return-burst", "4000", "--wide-rate", "5000", "--wide-burst", "6000", "--wide-return-rate", "7000",
		"--wide-return-burst", "8000", "--max-pace", "9", "--cookie-rate", "10000", "--cookie-burst", "11000", "--no-cookies"})
	if err != nil {
		t.Fatal(err)
	}
	want = master.ResponseLimits{NetBits4: 22, WideBits4: 12, NetBits6: 60, WideBits6: 44, NetRate: 1000, NetBurst: 2000,
		NetReturnRate: 3000, NetReturnBurst: 4000, WideRate: 5000, WideBurst: 6000, WideReturnRate: 7000, WideReturnBurst: 8000,
		MaxPace: 9 * time.Second, CookieRate: 10000, CookieBurst: 11000}
	if s.Config.Responses != want || s.Config.CookieRotation != -1 {
		t.Fatalf("responses %+v, cookie rotation %v", s.Config.Responses, s.Config.CookieRotation)
	}
	for _, bad := range []string{"16,24", "24", "33,16", "24,x"} {
		if _, err := parseMaster(t.Context(), []string{"--prefix4", bad}); err == nil {
			t.Errorf("--prefix4 %s accepted", bad)
		}
	}
}
