package master

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
)

// Settings are Options resolved into the pieces the server is built from.
type Settings struct {
	Registry Config
	Handler  HandlerConfig // without Registry, limiters, budget, Persist, Logger

	FloodProtection   bool
	FPThrottle        int
	FPDecay           time.Duration
	MaxSources        int
	HBThrottle        int
	HBDecay           time.Duration
	OutRate, OutBurst int
	Listen            []netip.AddrPort // master sockets
	ListenExplicit    bool             // -l given: failing to open one is fatal
	MOTDListen        []netip.AddrPort // MOTD sockets; empty when off
	State, HTTP       string
	LogLevel          slog.Level
	LogOff            bool // -v 0
	LogJSON           bool
	RotationPeriod    time.Duration
	Catalogue         *game.Catalogue
	PrintGames        bool
}

// Settings checks o and resolves its addresses (host names with ctx).
func (o Options) Settings(ctx context.Context) (Settings, error) {
	s := Settings{
		FloodProtection: o.FloodProtection == nil || *o.FloodProtection,
		FPThrottle:      def(o.FPThrottle, DefaultThrottle),
		FPDecay:         time.Duration(def(o.FPDecayTime, int(DefaultDecayTime/time.Second))) * time.Second,
		MaxSources:      def(o.MaxClients, DefaultMaxSources),
		HBThrottle:      def(o.HBThrottle, DefaultHBThrottle),
		HBDecay:         time.Duration(def(o.HBDecayTime, int(DefaultHBDecayTime/time.Second))) * time.Second,
		OutRate:         def(o.OutRate, DefaultOutboundBytesPerSecond),
		OutBurst:        def(o.OutBurst, DefaultOutboundBurst),
		State:           o.State,
		HTTP:            o.HTTP,
		LogJSON:         o.LogFormat == "json",
		RotationPeriod:  DefaultRotationPeriod,
		PrintGames:      o.PrintGames,
	}
	verbose := DefaultVerbose
	if o.Verbose != 0 || o.verboseSet() {
		verbose = o.Verbose
	}
	switch verbose {
	case 0:
		s.LogOff = true
	case 1:
		s.LogLevel = slog.LevelError
	case 2:
		s.LogLevel = slog.LevelWarn
	case 3:
		s.LogLevel = slog.LevelInfo
	default:
		s.LogLevel = slog.LevelDebug
	}

	cat := game.Default()
	for _, g := range o.GameProperties {
		props, err := game.ParseProperties(g[0], g[1:]...)
		if err != nil {
			return s, fmt.Errorf("%w: -g %s: %v", ErrUsage, strings.Join(g, " "), err)
		}
		if cat, err = cat.Apply(props...); err != nil {
			return s, fmt.Errorf("%w: -g %s: %v", ErrUsage, strings.Join(g, " "), err)
		}
	}
	s.Catalogue = cat
	policy, err := game.ParsePolicy(o.GamePolicy...)
	if err != nil {
		return s, fmt.Errorf("%w: --game-policy: %v", ErrUsage, err)
	}
	var maps []Mapping
	for _, m := range o.Map {
		x, err := ParseMapping(m)
		if err != nil {
			return s, fmt.Errorf("%w: -m: %v", ErrUsage, err)
		}
		maps = append(maps, x)
	}
	am, err := NewAddrMap(maps...)
	if err != nil {
		return s, fmt.Errorf("%w: -m: %v", ErrUsage, err)
	}
	perAddr := o.MaxServersPerAddr
	if o.HashPorts {
		if perAddr != 0 {
			return s, fmt.Errorf("%w: --hash-ports and -N exclude each other (as in dpmaster)", ErrUsage)
		}
		perAddr = -1
	}
	s.Registry = Config{
		MaxServers:           o.MaxServers,
		MaxServersPerAddress: perAddr,
		Timeout:              time.Duration(o.Timeout) * time.Second,
		AllowLoopback:        o.AllowLoopback,
		Catalogue:            cat,
		Policy:               policy,
		AddrMap:              am,
	}
	if o.VerifyRetries != nil {
		s.Registry.VerifyRetries = *o.VerifyRetries
		if *o.VerifyRetries == 0 {
			s.Registry.VerifyRetries = -1 // none; the Config's 0 is the default
		} else if *o.VerifyRetries < 0 || *o.VerifyRetries > MaxVerifyRetries {
			return s, fmt.Errorf("%w: verify-retries: want 0 to %d, got %d", ErrUsage, MaxVerifyRetries, *o.VerifyRetries)
		}
	}
	if len(o.MOTD) > MaxMOTDLen || strings.ContainsAny(o.MOTD, "\"\\\x00\n") {
		return s, fmt.Errorf(`%w: --motd: at most %d bytes without '"', '\', NUL or newline`, ErrUsage, MaxMOTDLen)
	}
	s.Handler = HandlerConfig{
		MaxPacketBytes: o.MaxPacketBytes,
		MaxEntries:     o.EntriesPerPacket,
		EndOnLastOnly:  o.EndOnLastOnly,
		MOTD:           o.MOTD,
	}

	port := def(o.Port, DefaultPort)
	if o.Port == 0 && o.portZeroSet() {
		port = 0
	}
	if len(o.Listen) == 0 {
		s.Listen = []netip.AddrPort{
			netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)),
			netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(port)),
		}
	} else {
		s.ListenExplicit = true
		for _, l := range o.Listen {
			a, err := resolve(ctx, l, port)
			if err != nil {
				return s, fmt.Errorf("%w: -l %s: %v", ErrUsage, l, err)
			}
			s.Listen = append(s.Listen, a...)
		}
	}
	motdPort := DefaultMOTDPort
	if o.MOTDPort != 0 || o.motdPortZeroSet() {
		motdPort = o.MOTDPort
	}
	if o.MOTD != "" && motdPort != 0 {
		for _, l := range s.Listen {
			s.MOTDListen = append(s.MOTDListen, netip.AddrPortFrom(l.Addr(), uint16(motdPort)))
		}
	}
	for _, p := range o.Peers {
		a, err := resolve(ctx, p, 0)
		if err != nil {
			return s, fmt.Errorf("%w: --peer %s: %v", ErrUsage, p, err)
		}
		s.Handler.Peers = append(s.Handler.Peers, a...)
	}
	for _, u := range o.Upstreams {
		a, err := resolve(ctx, u, DefaultPort)
		if err != nil {
			return s, fmt.Errorf("%w: --upstream %s: %v", ErrUsage, u, err)
		}
		s.Handler.Upstreams = append(s.Handler.Upstreams, a[0])
	}
	return s, nil
}

func def(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// The zero values that were given explicitly, for -v 0, -p 0 and
// --motd-port 0. ParseArgs records them.
func (o Options) verboseSet() bool      { return o.zeroes&zeroVerbose != 0 }
func (o Options) portZeroSet() bool     { return o.zeroes&zeroPort != 0 }
func (o Options) motdPortZeroSet() bool { return o.zeroes&zeroMOTDPort != 0 }

// resolve reads ADDR[:PORT] ("1.2.3.4", "1.2.3.4:5", "::1", "[::1]:5",
// "host", "host:5"), using port when none is given.
func resolve(ctx context.Context, s string, port int) ([]netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(s); err == nil {
		return []netip.AddrPort{a}, nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(a, uint16(port))}, nil
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port %q", p)
		}
		host, port = h, int(n)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	return out, nil
}
