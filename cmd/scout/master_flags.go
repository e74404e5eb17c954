package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

// errMasterUsage wraps every command-line error; errMasterHelp is returned for -h.
var (
	errMasterUsage = errors.New("usage")
	errMasterHelp  = errors.New("help requested")
)

// arity of an option on the command line.
type arity int8

const (
	argNone     arity = iota
	argOne            // exactly one value
	argLevel          // -v: an optional single digit
	argPolicy         // accept|reject, then one name, then names not starting with '-'
	argGameProp       // optional: GAME, then one property, then more not starting with '-'
	argWords          // one value, then at least one more, then more not starting with '-'
)

// fileKind is how an option's value is written in a --config file.
type fileKind int8

const (
	fileNone    fileKind = iota // not in a file (-h, --config)
	fileFlag                    // true applies the option, false nothing
	fileInt                     // a number; 0 means the default unless the option takes 0
	fileString                  // a string; "" means the default
	fileList                    // an array of strings, each one use of the option
	fileLists                   // an array of arrays of strings, each one use
	fileIgnored                 // accepted, whatever it is
	fileRefused                 // refused, whatever it is, with the option's reason
)

// optSpec is one of scout master's options: its names, how it is written
// on the command line and in a --config file, and what it sets.
type optSpec struct {
	long  string
	short byte
	arity arity
	file  fileKind
	// zero: 0 is a value of this number option (a port, a count that may
	// be none); in a --config file any other option's 0 is its default.
	zero bool
	// onFalse is the option a false value applies in a --config file.
	onFalse string
	set     func(a *masterArgs, v []string) error
	help    string // "": not listed by -h
}

// atoi reads a whole number of at least min.
func atoi(v string, min int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		return 0, fmt.Errorf("want an integer >= %d, got %q", min, v)
	}
	return n, nil
}

// intOpt is a number option of at least min stored in *dst(a).
func intOpt(long string, short byte, min int, dst func(*masterArgs) *int, help string) optSpec {
	return optSpec{long: long, short: short, arity: argOne, file: fileInt, help: help,
		set: func(a *masterArgs, v []string) error {
			n, err := atoi(v[0], min)
			*dst(a) = n
			return err
		}}
}

// durOpt is a number option of at least min, in units of unit.
func durOpt(long string, min int, unit time.Duration, dst func(*masterArgs) *time.Duration, help string) optSpec {
	return optSpec{long: long, arity: argOne, file: fileInt, help: help,
		set: func(a *masterArgs, v []string) error {
			n, err := atoi(v[0], min)
			*dst(a) = time.Duration(n) * unit
			return err
		}}
}

// portOpt is a port, 0 to 65535; nil in *dst(a) means not given.
func portOpt(long string, short byte, dst func(*masterArgs) **int, help string) optSpec {
	return optSpec{long: long, short: short, arity: argOne, file: fileInt, zero: true, help: help,
		set: func(a *masterArgs, v []string) error {
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("want a port 0-65535, got %q", v[0])
			}
			*dst(a) = &n
			return nil
		}}
}

func strOpt(long string, dst func(*masterArgs) *string, help string) optSpec {
	return optSpec{long: long, arity: argOne, file: fileString, help: help,
		set: func(a *masterArgs, v []string) error { *dst(a) = v[0]; return nil }}
}

func listOpt(long string, short byte, dst func(*masterArgs) *[]string, help string) optSpec {
	return optSpec{long: long, short: short, arity: argOne, file: fileList, help: help,
		set: func(a *masterArgs, v []string) error { *dst(a) = append(*dst(a), v[0]); return nil }}
}

func flagOpt(long string, short byte, f func(*masterArgs), help string) optSpec {
	return optSpec{long: long, short: short, arity: argNone, file: fileFlag, help: help,
		set: func(a *masterArgs, _ []string) error { f(a); return nil }}
}

func refusedOpt(long string, short byte, ar arity, why string) optSpec {
	return optSpec{long: long, short: short, arity: ar, file: fileRefused,
		set: func(*masterArgs, []string) error { return errors.New(why) }}
}

func ignoredOpt(long string, short byte) optSpec {
	return optSpec{long: long, short: short, arity: argOne, file: fileIgnored,
		set: func(*masterArgs, []string) error { return nil }, help: "accepted and ignored: scout's tables size themselves"}
}

// cfg is the master's configuration being filled.
func (a *masterArgs) cfg() *masterd.Config { return &a.setup.Config }

// masterOptionSpecs is dpmaster 2.x's option list (doc/dpmaster.txt, "dpmaster -h"),
// each implemented, accepted as meaningless, or refused with the reason,
// followed by scout's own (the aggregation's and the block list's last,
// master_aggregate.go). Each fills the same masterd.Config from the
// command line and from a --config file (its key is the long name).
var masterOptionSpecs = slices.Concat([]optSpec{
	{long: "help", short: 'h', arity: argNone, set: func(*masterArgs, []string) error { return errMasterHelp }, help: "print this help"},
	portOpt("port", 'p', func(a *masterArgs) **int { return &a.port }, "default port to listen on (27950)"),
	listOpt("listen", 'l', func(a *masterArgs) *[]string { return &a.listen }, "listen on ADDR[:PORT] ([v6]:port); several allowed; default 0.0.0.0 and ::"),
	intOpt("max-servers", 'n', 1, func(a *masterArgs) *int { return &a.cfg().Registry.MaxServers }, "maximum number of servers (16384)"),
	intOpt("max-pending", 0, 1, func(a *masterArgs) *int { return &a.cfg().Registry.MaxPending }, "servers challenged and not yet verified (4096); an unanswered check holds its place 5 s, so registering R servers a second of which a fraction P go unanswered needs R*P*5"),
	intOpt("max-servers-per-addr", 'N', 1, func(a *masterArgs) *int { return &a.cfg().Registry.MaxServersPerAddress }, "maximum servers per IPv4 address or IPv6 /64 (32)"),
	{long: "flood-protection", short: 'f', arity: argNone, file: fileFlag, onFalse: "no-flood-protection",
		set:  func(a *masterArgs, _ []string) error { a.cfg().SourceThrottle = true; return nil },
		help: "dpmaster's flood protection on queries (per source: --fp-throttle, --fp-decay-time) instead of scout's default, response rate limiting per victim address"},
	flagOpt("no-flood-protection", 0, func(a *masterArgs) { a.cfg().NoQueryLimit = true }, "turn the defences on queries off (the global --out-rate budget stays)"),
	{long: "fp-throttle", arity: argOne, file: fileInt, help: "flood protection throttle limit (5)",
		set: func(a *masterArgs, v []string) (err error) {
			a.cfg().SourceThrottle = true
			a.cfg().Queries.Throttle, err = atoi(v[0], 2)
			return err
		}},
	{long: "fp-decay-time", arity: argOne, file: fileInt, help: "flood protection decay time in seconds (3)",
		set: func(a *masterArgs, v []string) error {
			a.cfg().SourceThrottle = true
			n, err := atoi(v[0], 1)
			a.cfg().Queries.Decay = time.Duration(n) * time.Second
			return err
		}},
	intOpt("max-clients", 0, 1, func(a *masterArgs) *int { return &a.cfg().MaxSources }, "maximum sources the flood protection tracks (16384)"),
	{long: "game-policy", arity: argPolicy, file: fileLists, help: "accept|reject GAME...: accept or reject only these games",
		set: func(a *masterArgs, v []string) error { a.policy = append(a.policy, v); return nil }},
	{long: "game-properties", short: 'g', arity: argGameProp, file: fileLists, set: setGameProperties,
		help: "GAME PROPERTY=VALUE,...: change a game (protocols, options, heartbeat, flatline, gamenames; =, +=, -=; reprobe=DURATION); alone: print the games"},
	flagOpt("list-loopback", 0, func(a *masterArgs) { a.cfg().Registry.AllowLoopback = true }, "list servers at loopback addresses (127.0.0.0/8, ::1): a master and its servers on one host (dpmaster calls it --allow-loopback, which works too)"),
	flagOpt("allow-loopback", 0, func(a *masterArgs) { a.cfg().Registry.AllowLoopback = true }, ""), // --list-loopback's former name
	flagOpt("hash-ports", 0, func(a *masterArgs) { a.hashPorts = true }, "tell servers apart by port only: no per-address limit (dpmaster's debugging option)"),
	listOpt("map", 'm', func(a *masterArgs) *[]string { return &a.maps }, "FROM=TO: publish server address FROM as TO (ADDR[:PORT])"),
	strOpt("world-map", func(a *masterArgs) *string { return &a.worldMap }, "FILE: publish the servers of 'scout-lab world --map-out FILE' at their public addresses (an -m for each pair; with --list-loopback)"),
	{long: "verbose", short: 'v', arity: argLevel, file: fileInt, zero: true, set: setVerbose,
		help: "[LEVEL]: 0 nothing, 1 fatal, 2 warnings, 3 activity (default), 4 everything; alone: 4"},
	ignoredOpt("hash-size", 'H'),
	ignoredOpt("cl-hash-size", 0),
	refusedOpt("daemon", 'D', argNone, "-D/--daemon is not supported: run scout master under a service manager (systemd, runit), which keeps it in the foreground"),
	{long: "jail-path", short: 'j', arity: argOne, file: fileString, set: func(a *masterArgs, v []string) error { a.setup.Jail = v[0]; return nil },
		help: "DIR: after binding, change the root directory to DIR (chroot; needs -u; as root)"},
	{long: "user", short: 'u', arity: argOne, file: fileString, set: func(a *masterArgs, v []string) error { a.setup.User = v[0]; return nil },
		help: "USER: after binding, become USER (a name, UID or UID:GID; as root)"},
	refusedOpt("log", 'L', argNone, "-L/--log is not supported: scout logs to standard error; let the service manager keep it (or use --log-format json)"),
	refusedOpt("log-file", 0, argOne, "--log-file is not supported: scout logs to standard error; redirect it"),

	strOpt("state", func(a *masterArgs) *string { return &a.setup.State }, "FILE: keep the registry in FILE (bbolt) across restarts and kill -9; a damaged FILE is logged, moved aside to FILE.damaged-YYYYMMDDTHHMMSSZ, and the list refills from heartbeats"),
	durOpt("commit-interval", 1, time.Millisecond, func(a *masterArgs) *time.Duration { return &a.cfg().CommitInterval }, "MS: commit what was verified or dropped to --state in one transaction at most every MS ms (100); kill -9 loses at most the last MS + one commit"),
	{long: "store", arity: argOne, file: fileString, help: "redis://HOST:PORT/DB: share the registry with the other instances of a fleet on this Redis, instead of --state",
		set: func(a *masterArgs, v []string) error {
			if !strings.HasPrefix(v[0], "redis://") && !strings.HasPrefix(v[0], "rediss://") && !strings.HasPrefix(v[0], "unix://") {
				return fmt.Errorf("want redis://HOST:PORT/DB (the registry shared by a fleet; --state FILE keeps it in a file), got %q", v[0])
			}
			a.setup.Redis = v[0]
			return nil
		}},
	strOpt("fleet-id", func(a *masterArgs) *string { return &a.setup.FleetID }, "ID: this instance's name in the fleet (random if not given)"),
	flagOpt("refuse-damaged-state", 0, func(a *masterArgs) { a.setup.RefuseDamaged = true }, "exit (status 1) when the --state file is damaged, empty or not scout's, leaving it in place"),
	strOpt("http", func(a *masterArgs) *string { return &a.cfg().HTTP }, "ADDR: serve the server browser (/), the JSON API (/api/v1/), /metrics, /healthz and the legacy /servers on ADDR (off by default)"),
	flagOpt("no-player-sightings", 0, func(a *masterArgs) { a.cfg().NoPlayerSightings = true }, "keep no record of where players were seen (the player pages, /api/v1/players/NAME): by default 7 days of the names in the servers' player lists, bots left out"),
	{long: "landmark-place", arity: argOne, file: fileString, help: "CITY|[NAME:]LAT,LON: act as a landmark placed there: the JSON API gives this master's RTT to each server, /api/v1/landmarks describes it, and a getserversExt with the word landmarks gets the RTTs after the list",
		set: func(a *masterArgs, v []string) error {
			lm, err := parseLandmarkPlace(v[0])
			a.landmarkPlace = &lm
			return err
		}},
	strOpt("landmark-id", func(a *masterArgs) *string { return &a.landmarkID }, "ID: the landmark's name in the JSON API (the --fleet-id, else the first -l address)"),
	{long: "landmark-address", arity: argOne, file: fileString, help: "ADDR:PORT: where clients and the other landmark masters reach this landmark (published at /api/v1/landmarks; in a fleet the other instances ping it there; default the first -l address)",
		set: func(a *masterArgs, v []string) error {
			if _, ok := parseLandmarkAddress(v[0]); !ok {
				return fmt.Errorf("want ADDR:PORT where clients and the other landmarks reach this master (not 0.0.0.0, not port 0), got %q", v[0])
			}
			a.landmarkAddress = v[0]
			return nil
		}},
	{long: "landmark-peer", arity: argOne, file: fileList, help: "[ID=]ADDR:PORT: another landmark master (its --landmark-id, by default its address) this one pings every 30 s for its RTT to it, published with its RTTs to the servers; several allowed; a fleet's landmarks ping the fleet's instead",
		set: func(a *masterArgs, v []string) error {
			p, err := parseLandmarkPeer(v[0])
			a.cfg().LandmarkPeers = append(a.cfg().LandmarkPeers, p)
			return err
		}},
	{long: "http-rate", arity: argOne, file: fileInt, help: "N: JSON API requests per second per client address (IPv6 /64) after the burst (10)",
		set: func(a *masterArgs, v []string) error {
			n, err := atoi(v[0], 1)
			a.cfg().API.Rate = float64(n)
			return err
		}},
	intOpt("http-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().API.Burst }, "N: JSON API requests a client may make at once (60)"),
	intOpt("http-max-conns", 0, 1, func(a *masterArgs) *int { return &a.cfg().HTTPLimits.MaxConns }, "N: HTTP connections open at once (4096, at most half the file limit); at the bound a new one takes the oldest idle one's place"),
	intOpt("http-max-conns-per-client", 0, 1, func(a *masterArgs) *int { return &a.cfg().HTTPLimits.MaxConnsPerClient }, "N: HTTP connections one client (IPv4 address, IPv6 /64) may hold open (64)"),
	durOpt("http-read-timeout", 1, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().HTTPLimits.ReadTimeout }, "SECONDS: to read a whole HTTP request (10; its header within 5)"),
	durOpt("http-write-timeout", 1, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().HTTPLimits.WriteTimeout }, "SECONDS: to write an HTTP response (60)"),
	durOpt("http-idle-timeout", 1, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().HTTPLimits.IdleTimeout }, "SECONDS: a kept-alive HTTP connection waits this long for its next request (30)"),
	flagOpt("http-no-limit", 0, func(a *masterArgs) { a.cfg().API.Rate = -1 }, "no per-client limit on the JSON API (load tests on loopback)"),
	{long: "http-max-rate", arity: argOne, file: fileInt, zero: true, help: "N: JSON API requests per second of all clients together, beyond which it answers 503 (2000); 0: no bound",
		set: func(a *masterArgs, v []string) error {
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 {
				return fmt.Errorf("want a number of requests per second, 0 for no bound, got %q", v[0])
			}
			a.cfg().API.MaxRate = float64(n)
			if n == 0 {
				a.cfg().API.MaxRate = -1
			}
			return nil
		}},
	{long: "motd", arity: argOne, file: fileString, help: "TEXT: answer Enemy Territory's getmotd with TEXT on the MOTD port",
		set: func(a *masterArgs, v []string) error {
			a.cfg().Handler.MOTD = v[0]
			return master.CheckMOTD(v[0])
		}},
	portOpt("motd-port", 0, func(a *masterArgs) **int { return &a.motdPort }, "port of the MOTD listener (27951); 0 turns it off"),
	listOpt("peer", 0, func(a *masterArgs) *[]string { return &a.peers }, "ADDR[:PORT]: accept register from this master; several allowed"),
	listOpt("upstream", 0, func(a *masterArgs) *[]string { return &a.upstreams }, "ADDR:PORT: forward verified servers to this master; several allowed"),
	{long: "config", arity: argOne, set: func(a *masterArgs, v []string) error { a.configFile = v[0]; return nil },
		help: "FILE: read options from a JSON object keyed by long option names (docs/config.md); the command line applies after it"},
	{long: "log-format", arity: argOne, file: fileString, help: "text|json: log format (text)",
		set: func(a *masterArgs, v []string) error {
			if v[0] != "text" && v[0] != "json" {
				return fmt.Errorf("want text or json, got %q", v[0])
			}
			a.setup.LogJSON = v[0] == "json"
			return nil
		}},
	durOpt("timeout", 1, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().Registry.Timeout }, "SECONDS: drop a server not verified for this long (900)"),
	intOpt("max-packet-bytes", 0, 64, func(a *masterArgs) *int { return &a.cfg().Handler.MaxPacketBytes }, "UDP payload of each server-list packet (1400)"),
	intOpt("entries-per-packet", 0, 1, func(a *masterArgs) *int { return &a.cfg().Handler.MaxEntries }, "N: at most N servers per getserversResponse (112 is id's master)"),
	flagOpt("eot-on-every", 0, func(a *masterArgs) { a.cfg().Handler.EndOnLastOnly = false }, "end marker on every server-list packet (the default; kept for scripts that pass it)"),
	flagOpt("eot-last-only", 0, func(a *masterArgs) { a.cfg().Handler.EndOnLastOnly = true }, "end marker on the last server-list packet only, as dpmaster 2.x (quakestat and ioquake3 then drop each other packet's last server)"),
	intOpt("out-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().OutRate }, "BYTES: global outbound budget per second (12500000)"),
	intOpt("read-buffer", 0, 1, func(a *masterArgs) *int { return &a.cfg().ReadBuffer }, "BYTES: each master socket's receive buffer (4194304; the kernel caps it at net.core.rmem_max)"),
	intOpt("out-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().OutBurst }, "BYTES: outbound burst (1048576)"),
	intOpt("victim-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.VictimRate }, "BYTES/S: replies to one address (IPv4, IPv6 /64) from any port, after the burst (16384; the default defence, off with -f)"),
	intOpt("victim-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.VictimBurst }, "BYTES: replies to one address at once (786432: 21 full lists of 5,000 servers)"),
	intOpt("return-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.ReturnRate }, "BYTES/S: replies to the ports an address was answered on before, each at most once a second (32768)"),
	intOpt("return-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.ReturnBurst }, "BYTES: the same at once (131072)"),
	{long: "prefix4", arity: argOne, file: fileString, help: "NET,WIDE: the IPv4 networks whose replies are limited together beside each address's (24,16: a /24 within a /16)",
		set: func(a *masterArgs, v []string) error {
			return setPrefixes(v[0], 32, &a.cfg().Responses.NetBits4, &a.cfg().Responses.WideBits4)
		}},
	{long: "prefix6", arity: argOne, file: fileString, help: "NET,WIDE: the same for IPv6 (56,48; an address is a /64)",
		set: func(a *masterArgs, v []string) error {
			return setPrefixes(v[0], 64, &a.cfg().Responses.NetBits6, &a.cfg().Responses.WideBits6)
		}},
	intOpt("net-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.NetRate }, "BYTES/S: replies to all the addresses of one network (--prefix4/6) from any port, after the burst (32768)"),
	intOpt("net-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.NetBurst }, "BYTES: the same at once (1048576)"),
	intOpt("net-return-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.NetReturnRate }, "BYTES/S: replies to the ports a network's addresses were answered on before (65536)"),
	intOpt("net-return-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.NetReturnBurst }, "BYTES: the same at once (262144)"),
	intOpt("wide-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.WideRate }, "BYTES/S: replies to all the addresses of one wider network (--prefix4/6), after the burst (65536)"),
	intOpt("wide-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.WideBurst }, "BYTES: the same at once (2097152)"),
	intOpt("wide-return-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.WideReturnRate }, "BYTES/S: the wider network's return lane (131072)"),
	intOpt("wide-return-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.WideReturnBurst }, "BYTES: the same at once (524288)"),
	durOpt("max-pace", 1, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().Responses.MaxPace }, "SECONDS: a reply larger than a budget's burst is paced at its rate if it can end within this (60)"),
	intOpt("cookie-rate", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.CookieRate }, "BYTES/S: replies to an address that echoed the cookie it was given (scout's clients), after the burst (1048576)"),
	intOpt("cookie-burst", 0, 1, func(a *masterArgs) *int { return &a.cfg().Responses.CookieBurst }, "BYTES: the same at once (8388608)"),
	flagOpt("no-cookies", 0, func(a *masterArgs) { a.cfg().CookieRotation = -1 }, "give scout's clients no cookies (the word is ignored, as by dpmaster)"),
	intOpt("hb-throttle", 0, 2, func(a *masterArgs) *int { return &a.cfg().Heartbeats.Throttle }, "heartbeat flood protection throttle per source (64)"),
	{long: "verify-retries", arity: argOne, file: fileInt, zero: true, help: "N: resend an unanswered check (getinfo, or the game's re-probe) up to N times, 1 s and 3 s after the first (2); 0: never",
		set: func(a *masterArgs, v []string) error {
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 || n > master.MaxVerifyRetries {
				return fmt.Errorf("want 0 to %d, got %q", master.MaxVerifyRetries, v[0])
			}
			a.cfg().Registry.VerifyRetries = n
			if n == 0 {
				a.cfg().Registry.VerifyRetries = -1 // none; the registry's 0 is its default
			}
			return nil
		}},
	durOpt("hb-decay-time", 1, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().Heartbeats.Decay }, "heartbeat flood protection decay time in seconds (1)"),
}, ecosystemOpts)

// setPrefixes reads "NET,WIDE" (network bits, at most most) into net and
// wide.
func setPrefixes(v string, most int, net, wide *int) error {
	n, w, ok := strings.Cut(v, ",")
	nb, err1 := strconv.Atoi(n)
	wb, err2 := strconv.Atoi(w)
	if !ok || err1 != nil || err2 != nil || wb < 1 || wb >= nb || nb > most {
		return fmt.Errorf("want NET,WIDE prefix lengths with WIDE < NET <= %d (24,16 for IPv4), got %q", most, v)
	}
	*net, *wide = nb, wb
	return nil
}

// setVerbose is -v [LEVEL]: no level is 4, everything.
func setVerbose(a *masterArgs, v []string) error {
	level := 4
	if len(v) == 1 {
		if len(v[0]) != 1 || v[0][0] < '0' || v[0][0] > '4' {
			return fmt.Errorf("level must be 0 to 4, got %q", v[0])
		}
		level = int(v[0][0] - '0')
	}
	a.setup.LogOff = level == 0
	a.setup.LogLevel = [...]slog.Level{slog.LevelInfo, slog.LevelError, slog.LevelWarn, slog.LevelInfo, slog.LevelDebug}[level]
	return nil
}

// setGameProperties is -g GAME PROPERTY...: the game's properties changed
// in the catalogue; a bare -g prints the catalogue.
func setGameProperties(a *masterArgs, v []string) error {
	if len(v) == 0 {
		a.setup.PrintGames = true
		return nil
	}
	props, err := game.ParseProperties(v[0], v[1:]...)
	if err != nil {
		return err
	}
	cat := a.cfg().Registry.Catalogue
	if cat == nil {
		cat = game.Default()
	}
	a.cfg().Registry.Catalogue, err = cat.Apply(props...)
	return err
}

func lookupOpt(long string, short byte) (optSpec, bool) {
	for _, s := range masterOptionSpecs {
		if (long != "" && s.long == long) || (short != 0 && s.short == short) {
			return s, true
		}
	}
	return optSpec{}, false
}

// parseMasterOpts applies args, in dpmaster's syntax, to a: "-n 16",
// "-n16", "--max-servers 16" and "--max-servers=16" are the same; -l, -m,
// -g, --game-policy, --peer and --upstream may repeat; -v takes an
// optional level digit ("-v", "-v 2", "-v2", "--verbose=2").
func parseMasterOpts(a *masterArgs, args []string) error {
	for i := 0; i < len(args); i++ {
		spec, name, inline, err := splitOpt(args[i])
		if err != nil {
			return err
		}
		vals, next, err := optValues(spec, name, inline, args, i)
		if err != nil {
			return err
		}
		i = next
		if err := spec.set(a, vals); err != nil {
			if errors.Is(err, errMasterHelp) {
				return err
			}
			return fmt.Errorf("%w: %s: %v", errMasterUsage, name, err)
		}
	}
	return nil
}

// splitOpt finds the option arg names and the value attached to it, if
// any ("--max-servers=16", "-n16").
func splitOpt(arg string) (spec optSpec, name string, inline *string, err error) {
	var ok bool
	name = arg
	switch {
	case strings.HasPrefix(arg, "--") && len(arg) > 2:
		long := arg[2:]
		if k, v, has := strings.Cut(long, "="); has {
			long, inline, name = k, &v, "--"+k
		}
		spec, ok = lookupOpt(long, 0)
	case strings.HasPrefix(arg, "-") && len(arg) > 1:
		spec, ok = lookupOpt("", arg[1])
		name = arg[:2]
		if len(arg) > 2 {
			v := arg[2:]
			inline = &v
		}
	default:
		return spec, name, nil, fmt.Errorf("%w: unexpected argument %q", errMasterUsage, arg)
	}
	if !ok {
		return spec, name, nil, fmt.Errorf("%w: unknown option %q", errMasterUsage, name)
	}
	return spec, name, inline, nil
}

// optValues reads the values of the option at args[i] by its arity and
// returns them with the index of the last argument they took.
func optValues(spec optSpec, name string, inline *string, args []string, i int) ([]string, int, error) {
	var vals []string
	next := func() (string, bool) {
		if i+1 < len(args) {
			i++
			return args[i], true
		}
		return "", false
	}
	switch spec.arity {
	case argNone:
		if inline != nil {
			return nil, i, fmt.Errorf("%w: %s takes no value", errMasterUsage, name)
		}
	case argOne:
		if inline != nil {
			vals = []string{*inline}
		} else if v, ok := next(); ok {
			vals = []string{v}
		} else {
			return nil, i, fmt.Errorf("%w: %s needs a value", errMasterUsage, name)
		}
	case argLevel:
		if inline != nil {
			vals = []string{*inline}
		} else if i+1 < len(args) && len(args[i+1]) == 1 && args[i+1][0] >= '0' && args[i+1][0] <= '9' {
			i++
			vals = []string{args[i]}
		}
	case argPolicy, argGameProp, argWords:
		// dpmaster: --game-policy needs accept|reject and one name,
		// whatever they look like ("--game-policy accept -v" accepts
		// a game called "-v"); -g needs a game and one property, or
		// nothing at all (print the games). More names or
		// properties follow while they do not start with '-'.
		if inline != nil {
			vals = []string{*inline}
		} else if spec.arity != argGameProp || (i+1 < len(args) && !strings.HasPrefix(args[i+1], "-")) {
			if v, ok := next(); ok {
				vals = []string{v}
			}
		}
		if len(vals) == 1 {
			v, ok := next()
			if !ok {
				return nil, i, fmt.Errorf("%w: %s %s needs at least one more parameter", errMasterUsage, name, vals[0])
			}
			vals = append(vals, v)
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vals = append(vals, args[i])
			}
		}
		if spec.arity == argPolicy && len(vals) < 2 {
			return nil, i, fmt.Errorf("%w: %s needs accept|reject and at least one game", errMasterUsage, name)
		}
		if spec.arity == argWords && len(vals) < 2 {
			return nil, i, fmt.Errorf("%w: %s needs a value and at least one more word", errMasterUsage, name)
		}
	}
	return vals, i, nil
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
	b.WriteString("\nRefused, with the reason: -D/--daemon, -L/--log, --log-file.\n")
	b.WriteString("\nExit status (dpmaster's): 0 after -h or a clean stop (SIGINT, SIGTERM); 1 for a bad\n")
	b.WriteString("option, option value or --config file, or a failure to start or to run.\n")
	return b.String()
}
