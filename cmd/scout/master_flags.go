package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/master"
)

// errMasterUsage wraps every command-line error; errMasterHelp is returned for -h.
var (
	errMasterUsage = errors.New("usage")
	errMasterHelp  = errors.New("help requested")
)

// masterOptions are scout master's settings, from dpmaster's command line, its
// own long options, and the JSON file --config names. The JSON keys are
// the long option names; the command line is applied after the file.
type masterOptions struct {
	// dpmaster's options, with its meaning.
	Port              int        `json:"port"`                 // -p, --port: default port (27950)
	Listen            []string   `json:"listen"`               // -l, --listen ADDR[:PORT]: several; none means 0.0.0.0 and ::
	MaxServers        int        `json:"max-servers"`          // -n
	MaxServersPerAddr int        `json:"max-servers-per-addr"` // -N; 0 means the default, negative unlimited
	MaxPending        int        `json:"max-pending"`          // --max-pending: servers challenged, not yet verified
	FloodProtection   *bool      `json:"flood-protection"`     // -f: dpmaster's per-source protection instead of scout's response rate limiting (--no-flood-protection: neither)
	FPThrottle        int        `json:"fp-throttle"`          // --fp-throttle
	FPDecayTime       int        `json:"fp-decay-time"`        // --fp-decay-time, seconds
	MaxClients        int        `json:"max-clients"`          // --max-clients: sources the flood protection tracks
	GamePolicy        [][]string `json:"game-policy"`          // --game-policy accept|reject NAME...
	GameProperties    [][]string `json:"game-properties"`      // -g GAME PROPERTY=VALUE,...
	PrintGames        bool       `json:"-"`                    // a bare -g: print the game properties and exit
	AllowLoopback     bool       `json:"allow-loopback"`       // --allow-loopback (tests only)
	HashPorts         bool       `json:"hash-ports"`           // --hash-ports: no per-address limit (dpmaster's debugging option)
	Map               []string   `json:"map"`                  // -m, --map FROM=TO
	WorldMap          string     `json:"world-map"`            // --world-map FILE: -m for every pair of an emulated world's table
	Verbose           int        `json:"verbose"`              // -v [LEVEL]: 0 nothing .. 4 everything; default 3

	// scout's own.
	State            string   `json:"state"`                // --state FILE: the registry on disk
	CommitInterval   int      `json:"commit-interval"`      // --commit-interval MS: group commit to --state (100)
	RefuseDamaged    bool     `json:"refuse-damaged-state"` // --refuse-damaged-state: exit instead of moving a damaged --state aside
	Store            string   `json:"store"`                // --store redis://HOST:PORT/DB: the registry shared by a fleet
	FleetID          string   `json:"fleet-id"`             // --fleet-id ID: this instance's name in the fleet
	HTTP             string   `json:"http"`                 // --http ADDR: the page, /api/v1/, /metrics, /healthz, /servers
	HTTPRate         int      `json:"http-rate"`            // --http-rate N: API requests per second per client (10)
	LandmarkPlace    string   `json:"landmark-place"`       // --landmark-place CITY|LAT,LON: publish RTTs as a landmark placed there
	LandmarkID       string   `json:"landmark-id"`          // --landmark-id ID: the landmark's name (the fleet id or the first -l address)
	LandmarkAddress  string   `json:"landmark-address"`     // --landmark-address ADDR:PORT: where clients and other landmarks reach this one (the first -l address)
	LandmarkPeers    []string `json:"landmark-peer"`        // --landmark-peer [ID=]ADDR:PORT: another landmark master to ping (alone, not in a fleet)
	HTTPBurst        int      `json:"http-burst"`           // --http-burst N: API requests at once per client (60)
	HTTPNoLimit      bool     `json:"http-no-limit"`        // --http-no-limit: no per-client limit on the API (benchmarks)
	HTTPMaxRate      *int     `json:"http-max-rate"`        // --http-max-rate N: API requests per second of all clients (2000); 0: none
	MOTD             string   `json:"motd"`                 // --motd TEXT: ET's message of the day; opens the MOTD port
	MOTDPort         int      `json:"motd-port"`            // --motd-port: default 27951
	Peers            []string `json:"peer"`                 // --peer ADDR[:PORT]: masters whose register is accepted
	Upstreams        []string `json:"upstream"`             // --upstream ADDR[:PORT]: masters verified servers are forwarded to
	LogFormat        string   `json:"log-format"`           // --log-format text|json
	Timeout          int      `json:"timeout"`              // --timeout SECONDS: silent-server expiry (900)
	MaxPacketBytes   int      `json:"max-packet-bytes"`     // --max-packet-bytes: server-list datagram size (1400)
	EntriesPerPacket int      `json:"entries-per-packet"`   // --entries-per-packet N: 112 is id's master
	EndOnLastOnly    bool     `json:"eot-last-only"`        // --eot-last-only: end marker on the last packet only (dpmaster 2.x); default every packet
	OutRate          int      `json:"out-rate"`             // --out-rate BYTES/S: global outbound budget
	OutBurst         int      `json:"out-burst"`            // --out-burst BYTES
	ReadBuffer       int      `json:"read-buffer"`          // --read-buffer BYTES: each socket's SO_RCVBUF
	VictimRate       int      `json:"victim-rate"`          // --victim-rate BYTES/S: response limit's open lane per address
	VictimBurst      int      `json:"victim-burst"`         // --victim-burst BYTES
	ReturnRate       int      `json:"return-rate"`          // --return-rate BYTES/S: response limit's return lane per address
	ReturnBurst      int      `json:"return-burst"`         // --return-burst BYTES
	HBThrottle       int      `json:"hb-throttle"`          // --hb-throttle: heartbeat flood protection
	HBDecayTime      int      `json:"hb-decay-time"`        // --hb-decay-time SECONDS
	VerifyRetries    *int     `json:"verify-retries"`       // --verify-retries N: resends of an unanswered check; nil: 2; 0: none
	ConfigFile       string   `json:"-"`                    // --config FILE

	zeroes uint8 // explicit zero values: -v 0, -p 0, --motd-port 0
}

const (
	zeroVerbose uint8 = 1 << iota
	zeroPort
	zeroMOTDPort
)

// defaultVerbose is -v's level when none is given: 3, activity.
const defaultVerbose = 3

// arity of an option.
type arity int8

const (
	argNone     arity = iota
	argOne            // exactly one value
	argLevel          // -v: an optional single digit
	argPolicy         // accept|reject, then one name, then names not starting with '-'
	argGameProp       // optional: GAME, then one property, then more not starting with '-'
)

type optSpec struct {
	long  string
	short byte
	arity arity
	set   func(o *masterOptions, v []string) error
	help  string
}

func intOpt(dst func(*masterOptions) *int, min int) func(*masterOptions, []string) error {
	return func(o *masterOptions, v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < min {
			return fmt.Errorf("want an integer >= %d, got %q", min, v[0])
		}
		*dst(o) = n
		return nil
	}
}

// zeroOpt is a port: 0 to 65535, remembering an explicit 0.
func zeroOpt(dst func(*masterOptions) *int, bit uint8) func(*masterOptions, []string) error {
	return func(o *masterOptions, v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("want a port 0-65535, got %q", v[0])
		}
		*dst(o) = n
		if n == 0 {
			o.zeroes |= bit
		}
		return nil
	}
}

func strOpt(dst func(*masterOptions) *string) func(*masterOptions, []string) error {
	return func(o *masterOptions, v []string) error { *dst(o) = v[0]; return nil }
}

func listOpt(dst func(*masterOptions) *[]string) func(*masterOptions, []string) error {
	return func(o *masterOptions, v []string) error { *dst(o) = append(*dst(o), v[0]); return nil }
}

func flagOpt(f func(*masterOptions)) func(*masterOptions, []string) error {
	return func(o *masterOptions, _ []string) error { f(o); return nil }
}

func refused(why string) func(*masterOptions, []string) error {
	return func(*masterOptions, []string) error { return errors.New(why) }
}

func ignored(*masterOptions, []string) error { return nil }

// masterOptionSpecs is dpmaster 2.x's option list (doc/dpmaster.txt, "dpmaster -h"),
// each implemented, accepted as meaningless, or refused with the reason,
// followed by scout's own.
var masterOptionSpecs = []optSpec{
	{"help", 'h', argNone, func(*masterOptions, []string) error { return errMasterHelp }, "print this help"},
	{"port", 'p', argOne, zeroOpt(func(o *masterOptions) *int { return &o.Port }, zeroPort), "default port to listen on (27950)"},
	{"listen", 'l', argOne, listOpt(func(o *masterOptions) *[]string { return &o.Listen }), "listen on ADDR[:PORT] ([v6]:port); several allowed; default 0.0.0.0 and ::"},
	{"max-servers", 'n', argOne, intOpt(func(o *masterOptions) *int { return &o.MaxServers }, 1), "maximum number of servers (16384)"},
	{"max-pending", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.MaxPending }, 1), "servers challenged and not yet verified (4096); an unanswered check holds its place 5 s, so registering R servers a second of which a fraction P go unanswered needs R*P*5"},
	{"max-servers-per-addr", 'N', argOne, intOpt(func(o *masterOptions) *int { return &o.MaxServersPerAddr }, 1), "maximum servers per IPv4 address or IPv6 /64 (32)"},
	{"flood-protection", 'f', argNone, flagOpt(func(o *masterOptions) { t := true; o.FloodProtection = &t }), "dpmaster's flood protection on queries (per source: --fp-throttle, --fp-decay-time) instead of scout's default, response rate limiting per victim address"},
	{"no-flood-protection", 0, argNone, flagOpt(func(o *masterOptions) { f := false; o.FloodProtection = &f }), "turn the defences on queries off (the global --out-rate budget stays)"},
	{"fp-throttle", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.FPThrottle }, 2), "flood protection throttle limit (5)"},
	{"fp-decay-time", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.FPDecayTime }, 1), "flood protection decay time in seconds (3)"},
	{"max-clients", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.MaxClients }, 1), "maximum sources the flood protection tracks (16384)"},
	{"game-policy", 0, argPolicy, func(o *masterOptions, v []string) error { o.GamePolicy = append(o.GamePolicy, v); return nil }, "accept|reject GAME...: accept or reject only these games"},
	{"game-properties", 'g', argGameProp, func(o *masterOptions, v []string) error {
		if len(v) == 0 {
			o.PrintGames = true
			return nil
		}
		o.GameProperties = append(o.GameProperties, v)
		return nil
	}, "GAME PROPERTY=VALUE,...: change a game (protocols, options, heartbeat, flatline, gamenames; =, +=, -=; reprobe=DURATION); alone: print the games"},
	{"allow-loopback", 0, argNone, flagOpt(func(o *masterOptions) { o.AllowLoopback = true }), "accept servers on loopback addresses (tests only)"},
	{"hash-ports", 0, argNone, flagOpt(func(o *masterOptions) { o.HashPorts = true }), "tell servers apart by port only: no per-address limit (tests only)"},
	{"map", 'm', argOne, listOpt(func(o *masterOptions) *[]string { return &o.Map }), "FROM=TO: publish server address FROM as TO (ADDR[:PORT])"},
	{"world-map", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.WorldMap }), "FILE: publish the servers of 'scout-lab world --map-out FILE' at their public addresses (an -m for each pair; with --allow-loopback)"},
	{"verbose", 'v', argLevel, func(o *masterOptions, v []string) error {
		o.Verbose = 4
		o.zeroes |= zeroVerbose
		if len(v) == 1 {
			o.Verbose = int(v[0][0] - '0')
		}
		return nil
	}, "[LEVEL]: 0 nothing, 1 fatal, 2 warnings, 3 activity (default), 4 everything; alone: 4"},
	{"hash-size", 'H', argOne, ignored, "accepted and ignored: scout's tables size themselves"},
	{"cl-hash-size", 0, argOne, ignored, "accepted and ignored: scout's tables size themselves"},
	{"daemon", 'D', argNone, refused("-D/--daemon is not supported: run scout master under a service manager (systemd, runit), which keeps it in the foreground"), ""},
	{"jail-path", 'j', argOne, refused("-j/--jail-path is not supported: confine scout with the service manager (systemd RootDirectory=, ProtectSystem=)"), ""},
	{"user", 'u', argOne, refused("-u/--user is not supported: start scout as an unprivileged user (systemd User= or DynamicUser=)"), ""},
	{"log", 'L', argNone, refused("-L/--log is not supported: scout logs to standard error; let the service manager keep it (or use --log-format json)"), ""},
	{"log-file", 0, argOne, refused("--log-file is not supported: scout logs to standard error; redirect it"), ""},

	{"state", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.State }), "FILE: keep the registry in FILE (bbolt) across restarts and kill -9; a damaged FILE is logged, moved aside to FILE.damaged-YYYYMMDDTHHMMSSZ, and the list refills from heartbeats"},
	{"commit-interval", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.CommitInterval }, 1), "MS: commit what was verified or dropped to --state in one transaction at most every MS ms (100); kill -9 loses at most the last MS + one commit"},
	{"store", 0, argOne, func(o *masterOptions, v []string) error {
		if !strings.HasPrefix(v[0], "redis://") && !strings.HasPrefix(v[0], "rediss://") && !strings.HasPrefix(v[0], "unix://") {
			return fmt.Errorf("want redis://HOST:PORT/DB (the registry shared by a fleet; --state FILE keeps it in a file), got %q", v[0])
		}
		o.Store = v[0]
		return nil
	}, "redis://HOST:PORT/DB: share the registry with the other instances of a fleet on this Redis, instead of --state"},
	{"fleet-id", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.FleetID }), "ID: this instance's name in the fleet (random if not given)"},
	{"refuse-damaged-state", 0, argNone, flagOpt(func(o *masterOptions) { o.RefuseDamaged = true }), "exit (status 1) when the --state file is damaged, empty or not scout's, leaving it in place"},
	{"http", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.HTTP }), "ADDR: serve the server browser (/), the JSON API (/api/v1/), /metrics, /healthz and the legacy /servers on ADDR (off by default)"},
	{"landmark-place", 0, argOne, func(o *masterOptions, v []string) error {
		if _, err := parseLandmarkPlace(v[0]); err != nil {
			return err
		}
		o.LandmarkPlace = v[0]
		return nil
	}, "CITY|[NAME:]LAT,LON: act as a landmark placed there: the JSON API gives this master's RTT to each server, /api/v1/landmarks describes it, and a getserversExt with the word landmarks gets the RTTs after the list"},
	{"landmark-id", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.LandmarkID }), "ID: the landmark's name in the JSON API (the --fleet-id, else the first -l address)"},
	{"landmark-address", 0, argOne, func(o *masterOptions, v []string) error {
		if _, ok := parseLandmarkAddress(v[0]); !ok {
			return fmt.Errorf("want ADDR:PORT where clients and the other landmarks reach this master (not 0.0.0.0, not port 0), got %q", v[0])
		}
		o.LandmarkAddress = v[0]
		return nil
	}, "ADDR:PORT: where clients and the other landmark masters reach this landmark (published at /api/v1/landmarks; in a fleet the other instances ping it there; default the first -l address)"},
	{"landmark-peer", 0, argOne, func(o *masterOptions, v []string) error {
		if _, err := parseLandmarkPeer(v[0]); err != nil {
			return err
		}
		o.LandmarkPeers = append(o.LandmarkPeers, v[0])
		return nil
	}, "[ID=]ADDR:PORT: another landmark master (its --landmark-id, by default its address) this one pings every 30 s for its RTT to it, published with its RTTs to the servers; several allowed; a fleet's landmarks ping the fleet's instead"},
	{"http-rate", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.HTTPRate }, 1), "N: JSON API requests per second per client address (IPv6 /64) after the burst (10)"},
	{"http-burst", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.HTTPBurst }, 1), "N: JSON API requests a client may make at once (60)"},
	{"http-no-limit", 0, argNone, flagOpt(func(o *masterOptions) { o.HTTPNoLimit = true }), "no per-client limit on the JSON API (load tests on loopback)"},
	{"http-max-rate", 0, argOne, func(o *masterOptions, v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 {
			return fmt.Errorf("want a number of requests per second, 0 for no bound, got %q", v[0])
		}
		o.HTTPMaxRate = &n
		return nil
	}, "N: JSON API requests per second of all clients together, beyond which it answers 503 (2000); 0: no bound"},
	{"motd", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.MOTD }), "TEXT: answer Enemy Territory's getmotd with TEXT on the MOTD port"},
	{"motd-port", 0, argOne, zeroOpt(func(o *masterOptions) *int { return &o.MOTDPort }, zeroMOTDPort), "port of the MOTD listener (27951); 0 turns it off"},
	{"peer", 0, argOne, listOpt(func(o *masterOptions) *[]string { return &o.Peers }), "ADDR[:PORT]: accept register from this master; several allowed"},
	{"upstream", 0, argOne, listOpt(func(o *masterOptions) *[]string { return &o.Upstreams }), "ADDR:PORT: forward verified servers to this master; several allowed"},
	{"config", 0, argOne, strOpt(func(o *masterOptions) *string { return &o.ConfigFile }), "FILE: read options from a JSON object keyed by long option names"},
	{"log-format", 0, argOne, func(o *masterOptions, v []string) error {
		if v[0] != "text" && v[0] != "json" {
			return fmt.Errorf("want text or json, got %q", v[0])
		}
		o.LogFormat = v[0]
		return nil
	}, "text|json: log format (text)"},
	{"timeout", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.Timeout }, 1), "SECONDS: drop a server not verified for this long (900)"},
	{"max-packet-bytes", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.MaxPacketBytes }, 64), "UDP payload of each server-list packet (1400)"},
	{"entries-per-packet", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.EntriesPerPacket }, 1), "N: at most N servers per getserversResponse (112 is id's master)"},
	{"eot-on-every", 0, argNone, flagOpt(func(o *masterOptions) { o.EndOnLastOnly = false }), "end marker on every server-list packet (the default; kept for scripts that pass it)"},
	{"eot-last-only", 0, argNone, flagOpt(func(o *masterOptions) { o.EndOnLastOnly = true }), "end marker on the last server-list packet only, as dpmaster 2.x (quakestat and ioquake3 then drop each other packet's last server)"},
	{"out-rate", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.OutRate }, 1), "BYTES: global outbound budget per second (12500000)"},
	{"read-buffer", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.ReadBuffer }, 1), "BYTES: each master socket's receive buffer (4194304; the kernel caps it at net.core.rmem_max)"},
	{"out-burst", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.OutBurst }, 1), "BYTES: outbound burst (1048576)"},
	{"victim-rate", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.VictimRate }, 1), "BYTES/S: replies to one address (IPv4, IPv6 /64) from any port, after the burst (16384; the default defence, off with -f)"},
	{"victim-burst", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.VictimBurst }, 1), "BYTES: replies to one address at once (786432: 21 full lists of 5,000 servers)"},
	{"return-rate", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.ReturnRate }, 1), "BYTES/S: replies to the ports an address was answered on before, each at most once a second (32768)"},
	{"return-burst", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.ReturnBurst }, 1), "BYTES: the same at once (131072)"},
	{"hb-throttle", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.HBThrottle }, 2), "heartbeat flood protection throttle per source (64)"},
	{"verify-retries", 0, argOne, func(o *masterOptions, v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 || n > master.MaxVerifyRetries {
			return fmt.Errorf("want 0 to %d, got %q", master.MaxVerifyRetries, v[0])
		}
		o.VerifyRetries = &n
		return nil
	}, "N: resend an unanswered check (getinfo, or the game's re-probe) up to N times, 1 s and 3 s after the first (2); 0: never"},
	{"hb-decay-time", 0, argOne, intOpt(func(o *masterOptions) *int { return &o.HBDecayTime }, 1), "heartbeat flood protection decay time in seconds (1)"},
}

// parseMasterArgs reads scout master's command line, in dpmaster's syntax:
// "-n 16", "-n16", "--max-servers 16" and "--max-servers=16" are the
// same; -l, -m, -g, --game-policy, --peer and --upstream may repeat; -v
// takes an optional level digit ("-v", "-v 2", "-v2", "--verbose=2").
// When the command line names a --config file, the file is read first
// and the command line applied on top of it.
func parseMasterArgs(args []string) (masterOptions, error) {
	var o masterOptions
	if err := parseMasterOpts(&o, args); err != nil {
		return o, err
	}
	if o.ConfigFile == "" {
		return o, nil
	}
	b, err := os.ReadFile(o.ConfigFile)
	if err != nil {
		return o, fmt.Errorf("%w: --config: %v", errMasterUsage, err)
	}
	var f masterOptions
	if err := unmarshalStrict(b, &f); err != nil {
		return o, fmt.Errorf("%w: --config %s: %v", errMasterUsage, o.ConfigFile, err)
	}
	f.ConfigFile = o.ConfigFile
	if err := parseMasterOpts(&f, args); err != nil {
		return f, err
	}
	return f, nil
}

func unmarshalStrict(b []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func lookupOpt(long string, short byte) (optSpec, bool) {
	for _, s := range masterOptionSpecs {
		if (long != "" && s.long == long) || (short != 0 && s.short == short) {
			return s, true
		}
	}
	return optSpec{}, false
}

func parseMasterOpts(o *masterOptions, args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		var spec optSpec
		var ok bool
		var inline *string // a value attached to the option
		name := a
		switch {
		case strings.HasPrefix(a, "--") && len(a) > 2:
			long := a[2:]
			if k, v, has := strings.Cut(long, "="); has {
				long, inline = k, &v
			}
			spec, ok = lookupOpt(long, 0)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			spec, ok = lookupOpt("", a[1])
			name = a[:2]
			if len(a) > 2 {
				v := a[2:]
				inline = &v
			}
		default:
			return fmt.Errorf("%w: unexpected argument %q", errMasterUsage, a)
		}
		if !ok {
			return fmt.Errorf("%w: unknown option %q (scout master -h lists them)", errMasterUsage, name)
		}
		var vals []string
		next := func() (string, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		more := func() {
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vals = append(vals, args[i])
			}
		}
		switch spec.arity {
		case argNone:
			if inline != nil {
				return fmt.Errorf("%w: %s takes no value", errMasterUsage, name)
			}
		case argOne:
			if inline != nil {
				vals = []string{*inline}
			} else if v, ok := next(); ok {
				vals = []string{v}
			} else {
				return fmt.Errorf("%w: %s needs a value", errMasterUsage, name)
			}
		case argLevel:
			if inline != nil {
				vals = []string{*inline}
			} else if i+1 < len(args) && len(args[i+1]) == 1 && args[i+1][0] >= '0' && args[i+1][0] <= '9' {
				i++
				vals = []string{args[i]}
			}
			if len(vals) == 1 && (len(vals[0]) != 1 || vals[0][0] < '0' || vals[0][0] > '4') {
				return fmt.Errorf("%w: %s: level must be 0 to 4, got %q", errMasterUsage, name, vals[0])
			}
		case argPolicy, argGameProp:
			// dpmaster: --game-policy needs accept|reject and one name,
			// whatever they look like ("--game-policy accept -v" accepts
			// a game called "-v"); -g needs a game and one property, or
			// nothing at all (print the games). More names or
			// properties follow while they do not start with '-'.
			if inline != nil {
				vals = []string{*inline}
			} else if spec.arity == argPolicy || (i+1 < len(args) && !strings.HasPrefix(args[i+1], "-")) {
				if v, ok := next(); ok {
					vals = []string{v}
				}
			}
			if len(vals) == 1 {
				v, ok := next()
				if !ok {
					return fmt.Errorf("%w: %s %s needs at least one more parameter", errMasterUsage, name, vals[0])
				}
				vals = append(vals, v)
				more()
			}
			if spec.arity == argPolicy && len(vals) < 2 {
				return fmt.Errorf("%w: %s needs accept|reject and at least one game", errMasterUsage, name)
			}
		}
		if err := spec.set(o, vals); err != nil {
			if errors.Is(err, errMasterHelp) {
				return err
			}
			return fmt.Errorf("%w: %s: %v", errMasterUsage, name, err)
		}
	}
	return nil
}

// masterUsage returns the option list for -h.
func masterUsage() string {
	var b strings.Builder
	b.WriteString("usage: scout master [options]\n\n")
	b.WriteString("A master server for the Quake III family, Quake 4 and Doom 3; dpmaster's\n")
	b.WriteString("options keep dpmaster's meaning (\"-n 16\", \"-n16\", \"--max-servers=16\").\n\nOptions:\n")
	for _, s := range masterOptionSpecs {
		if s.help == "" {
			continue
		}
		n := "    --" + s.long
		if s.short != 0 {
			n = "-" + string(s.short) + ", --" + s.long
		}
		fmt.Fprintf(&b, "  %-28s %s\n", n, s.help)
	}
	b.WriteString("\nRefused, with the reason: -D/--daemon, -j/--jail-path, -u/--user, -L/--log, --log-file.\n")
	return b.String()
}
