package main

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
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/web"
)

// masterSettings are masterOptions resolved: the master's configuration,
// and what the command itself does with the rest.
type masterSettings struct {
	// Config is the master's, without Store and Logger (runMaster opens
	// them from State and the log fields).
	masterd.Config
	State      string     // --state FILE
	Refuse     bool       // --refuse-damaged-state
	Store      string     // --store redis://...
	FleetID    string     // --fleet-id
	LandmarkID string     // --landmark-id
	LogLevel   slog.Level // -v
	LogOff     bool       // -v 0
	LogJSON    bool       // --log-format json
	Catalogue  *game.Catalogue
	PrintGames bool // a bare -g
}

// settings checks o and resolves its addresses (host names with ctx).
func (o masterOptions) settings(ctx context.Context) (masterSettings, error) {
	s := masterSettings{
		Config: masterd.Config{
			NoQueryLimit: o.FloodProtection != nil && !*o.FloodProtection,
			// dpmaster's options keep dpmaster's meaning; without them
			// the default is the response rate limiting.
			SourceThrottle: o.FloodProtection != nil && *o.FloodProtection || o.FPThrottle != 0 || o.FPDecayTime != 0,
			Queries: masterd.Limit{
				Throttle: orDefault(o.FPThrottle, master.DefaultThrottle),
				Decay:    time.Duration(orDefault(o.FPDecayTime, int(master.DefaultDecayTime/time.Second))) * time.Second,
			},
			Heartbeats: masterd.Limit{
				Throttle: orDefault(o.HBThrottle, masterd.DefaultHBThrottle),
				Decay:    time.Duration(orDefault(o.HBDecayTime, int(masterd.DefaultHBDecayTime/time.Second))) * time.Second,
			},
			MaxSources: orDefault(o.MaxClients, master.DefaultMaxSources),
			OutRate:    orDefault(o.OutRate, master.DefaultOutboundBytesPerSecond),
			OutBurst:   orDefault(o.OutBurst, master.DefaultOutboundBurst),
			ReadBuffer: o.ReadBuffer, // 0: masterd.DefaultReadBuffer
			// Zero fields are the master.Default* figures.
			Responses: master.ResponseLimits{
				VictimRate: o.VictimRate, VictimBurst: o.VictimBurst,
				ReturnRate: o.ReturnRate, ReturnBurst: o.ReturnBurst,
			},
			HTTP:              o.HTTP,
			API:               web.Config{Rate: float64(orDefault(o.HTTPRate, web.DefaultRate)), Burst: orDefault(o.HTTPBurst, web.DefaultBurst)},
			CommitInterval:    time.Duration(orDefault(o.CommitInterval, int(masterd.DefaultCommitInterval/time.Millisecond))) * time.Millisecond,
			ChallengeRotation: master.DefaultRotationPeriod,
		},
		State:      o.State,
		Refuse:     o.RefuseDamaged,
		Store:      o.Store,
		FleetID:    o.FleetID,
		LandmarkID: o.LandmarkID,
		LogJSON:    o.LogFormat == "json",
		PrintGames: o.PrintGames,
	}
	if o.HTTPNoLimit {
		s.API.Rate = -1
	}
	if o.HTTPMaxRate != nil {
		s.API.MaxRate = float64(*o.HTTPMaxRate)
		if *o.HTTPMaxRate == 0 {
			s.API.MaxRate = -1
		}
	}
	if o.LandmarkPlace != "" || o.LandmarkID != "" {
		var lm master.Landmark
		if o.LandmarkPlace != "" {
			var err error
			if lm, err = parseLandmarkPlace(o.LandmarkPlace); err != nil {
				return s, fmt.Errorf("%w: --landmark-place: %v", errMasterUsage, err)
			}
		}
		if len(o.Listen) > 0 {
			lm.Address = o.Listen[0]
		}
		if o.LandmarkAddress != "" {
			lm.Address = o.LandmarkAddress
		}
		lm.ID = o.LandmarkID
		for _, id := range []string{o.FleetID, lm.Address, "master"} {
			if lm.ID == "" {
				lm.ID = id
			}
		}
		s.API.Landmark = &lm
	}
	verbose := defaultVerbose
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
			return s, fmt.Errorf("%w: -g %s: %v", errMasterUsage, strings.Join(g, " "), err)
		}
		if cat, err = cat.Apply(props...); err != nil {
			return s, fmt.Errorf("%w: -g %s: %v", errMasterUsage, strings.Join(g, " "), err)
		}
	}
	s.Catalogue = cat
	policy, err := game.ParsePolicy(o.GamePolicy...)
	if err != nil {
		return s, fmt.Errorf("%w: --game-policy: %v", errMasterUsage, err)
	}
	var maps []master.Mapping
	for _, m := range o.Map {
		x, err := master.ParseMapping(m)
		if err != nil {
			return s, fmt.Errorf("%w: -m: %v", errMasterUsage, err)
		}
		maps = append(maps, x)
	}
	if o.WorldMap != "" {
		wm, err := master.LoadMappingFile(o.WorldMap)
		if err != nil {
			return s, fmt.Errorf("%w: --world-map: %v", errMasterUsage, err)
		}
		maps = append(maps, wm...)
	}
	am, err := master.NewAddrMap(maps...)
	if err != nil {
		return s, fmt.Errorf("%w: -m: %v", errMasterUsage, err)
	}
	perAddr := o.MaxServersPerAddr
	if o.HashPorts {
		if perAddr != 0 {
			return s, fmt.Errorf("%w: --hash-ports and -N exclude each other (as in dpmaster)", errMasterUsage)
		}
		perAddr = -1
	}
	s.Registry = master.Config{
		MaxServers:           o.MaxServers,
		MaxServersPerAddress: perAddr,
		MaxPending:           o.MaxPending,
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
		} else if *o.VerifyRetries < 0 || *o.VerifyRetries > master.MaxVerifyRetries {
			return s, fmt.Errorf("%w: verify-retries: want 0 to %d, got %d", errMasterUsage, master.MaxVerifyRetries, *o.VerifyRetries)
		}
	}
	if o.CommitInterval < 0 { // from --config; the command line refuses it
		return s, fmt.Errorf("%w: commit-interval: want at least 1 (milliseconds), got %d", errMasterUsage, o.CommitInterval)
	}
	if len(o.MOTD) > master.MaxMOTDLen || strings.ContainsAny(o.MOTD, "\"\\\x00\n") {
		return s, fmt.Errorf(`%w: --motd: at most %d bytes without '"', '\', NUL or newline`, errMasterUsage, master.MaxMOTDLen)
	}
	s.Handler = master.HandlerConfig{
		MaxPacketBytes: o.MaxPacketBytes,
		MaxEntries:     o.EntriesPerPacket,
		EndOnLastOnly:  o.EndOnLastOnly,
		MOTD:           o.MOTD,
	}
	if s.API.Landmark != nil {
		if _, err := q3.EncodeLandmarksResponses(s.API.Landmark.ID, nil, 0); err != nil {
			return s, fmt.Errorf("%w: --landmark-id %q: 1 to %d letters, digits or ._:-[]", errMasterUsage, s.API.Landmark.ID, q3.MaxLandmarkIDLen)
		}
		s.Handler.Landmark = s.API.Landmark.ID
	}
	if len(o.LandmarkPeers) > 0 {
		if s.API.Landmark == nil {
			return s, fmt.Errorf("%w: --landmark-peer: only a landmark (--landmark-place or --landmark-id) pings the others", errMasterUsage)
		}
		if o.Store != "" {
			return s, fmt.Errorf("%w: --landmark-peer: a fleet's landmarks ping the fleet's other instances (--store); give it to a master alone", errMasterUsage)
		}
		for _, v := range o.LandmarkPeers {
			p, err := parseLandmarkPeer(v)
			if err != nil {
				return s, fmt.Errorf("%w: --landmark-peer: %v", errMasterUsage, err)
			}
			s.LandmarkPeers = append(s.LandmarkPeers, p)
		}
	}
	if o.LandmarkAddress != "" && s.API.Landmark == nil {
		return s, fmt.Errorf("%w: --landmark-address: only for a landmark (--landmark-place or --landmark-id)", errMasterUsage)
	}

	port := orDefault(o.Port, masterd.DefaultPort)
	if o.Port == 0 && o.portZeroSet() {
		port = 0
	}
	if len(o.Listen) == 0 {
		s.Listen = []netip.AddrPort{
			netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)),
			netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(port)),
		}
		s.OptionalIPv6 = true // as dpmaster: a host without IPv6 still runs
	} else {
		for _, l := range o.Listen {
			a, err := resolveAddrs(ctx, l, port)
			if err != nil {
				return s, fmt.Errorf("%w: -l %s: %v", errMasterUsage, l, err)
			}
			s.Listen = append(s.Listen, a...)
		}
	}
	motdPort := masterd.DefaultMOTDPort
	if o.MOTDPort != 0 || o.motdPortZeroSet() {
		motdPort = o.MOTDPort
	}
	if o.MOTD != "" && motdPort != 0 {
		for _, l := range s.Listen {
			s.MOTDListen = append(s.MOTDListen, netip.AddrPortFrom(l.Addr(), uint16(motdPort)))
		}
	}
	for _, p := range o.Peers {
		a, err := resolveAddrs(ctx, p, 0)
		if err != nil {
			return s, fmt.Errorf("%w: --peer %s: %v", errMasterUsage, p, err)
		}
		s.Handler.Peers = append(s.Handler.Peers, a...)
	}
	for _, u := range o.Upstreams {
		a, err := resolveAddrs(ctx, u, masterd.DefaultPort)
		if err != nil {
			return s, fmt.Errorf("%w: --upstream %s: %v", errMasterUsage, u, err)
		}
		s.Handler.Upstreams = append(s.Handler.Upstreams, a[0])
	}
	return s, nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// The zero values that were given explicitly, for -v 0, -p 0 and
// --motd-port 0. parseMasterArgs records them.
func (o masterOptions) verboseSet() bool      { return o.zeroes&zeroVerbose != 0 }
func (o masterOptions) portZeroSet() bool     { return o.zeroes&zeroPort != 0 }
func (o masterOptions) motdPortZeroSet() bool { return o.zeroes&zeroMOTDPort != 0 }

// resolveAddrs reads ADDR[:PORT] ("1.2.3.4", "1.2.3.4:5", "::1", "[::1]:5",
// "host", "host:5"), using port when none is given.
func resolveAddrs(ctx context.Context, s string, port int) ([]netip.AddrPort, error) {
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
