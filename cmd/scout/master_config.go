package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/privdrop"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/q3"
)

// masterSetup is what scout master's command line and --config file
// resolve to: the master's configuration, and how the command builds
// what the master works with (masterd.Deps: its state file or fleet, its
// logger).
type masterSetup struct {
	Config        masterd.Config
	State         string // --state FILE
	RefuseDamaged bool   // --refuse-damaged-state
	Redis         string // --store redis://...
	FleetID       string // --fleet-id
	LogLevel      slog.Level
	LogOff        bool   // -v 0
	LogJSON       bool   // --log-format json
	PrintGames    bool   // a bare -g
	User          string // -u: become this user after binding
	Jail          string // -j: chroot here after binding
}

// masterArgs is scout master's options as they are read: most fill the
// setup directly; those that depend on others wait here for resolve.
type masterArgs struct {
	setup           masterSetup
	configFile      string
	port, motdPort  *int // nil: not given
	listen, maps    []string
	peers           []string
	upstreams       []string
	aggregate       [][]string // --aggregate's words, each use
	scoutPeers      []string
	worldMap        string
	policy          [][]string
	hashPorts       bool
	landmarkPlace   *master.Landmark
	landmarkID      string
	landmarkAddress string
}

func newMasterArgs() masterArgs {
	return masterArgs{setup: masterSetup{LogLevel: slog.LevelInfo}}
}

// parseMaster reads scout master's command line and the --config file it
// names, and resolves them (host names with ctx).
func parseMaster(ctx context.Context, args []string) (masterSetup, error) {
	a, err := parseMasterArgs(args)
	if err != nil {
		return masterSetup{}, err
	}
	if err := (privdrop.Options{User: a.setup.User, Jail: a.setup.Jail}).Check(); err != nil {
		return masterSetup{}, fmt.Errorf("%w: %v", errMasterUsage, err)
	}
	return a.resolve(ctx)
}

// parseMasterArgs reads scout master's command line. When it names a
// --config file, the file is read first and the command line applied on
// top of it.
func parseMasterArgs(args []string) (masterArgs, error) {
	a := newMasterArgs()
	if err := parseMasterOpts(&a, args); err != nil || a.configFile == "" {
		return a, err
	}
	b, err := os.ReadFile(a.configFile)
	if err != nil {
		return a, fmt.Errorf("%w: --config: %v", errMasterUsage, err)
	}
	f := newMasterArgs()
	if err := applyConfigFile(&f, b); err != nil {
		return a, fmt.Errorf("%w: --config %s: %v", errMasterUsage, a.configFile, err)
	}
	err = parseMasterOpts(&f, args)
	return f, err
}

// applyConfigFile applies a --config file: a JSON object whose keys are
// long option names, applied in the file's order as those options.
func applyConfigFile(a *masterArgs, b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return errors.New("want a JSON object keyed by long option names")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		spec, ok := lookupOpt(key, 0)
		if !ok || spec.file == fileNone {
			return fmt.Errorf("unknown key %q (the keys are scout master's long option names)", key)
		}
		if err := applyFileValue(a, spec, raw); err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
	}
	if _, err := d.Token(); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("more after the JSON object")
	}
	return nil
}

// applyFileValue applies one key of a --config file, whose value raw is
// written as spec.file says.
func applyFileValue(a *masterArgs, spec optSpec, raw json.RawMessage) error {
	var uses [][]string
	var err error
	switch spec.file {
	case fileIgnored:
	case fileRefused:
		uses = [][]string{nil}
	case fileFlag:
		var on bool
		if err = json.Unmarshal(raw, &on); err == nil && on {
			uses = [][]string{nil}
		} else if err == nil && spec.onFalse != "" {
			spec, _ = lookupOpt(spec.onFalse, 0)
			uses = [][]string{nil}
		}
	case fileInt:
		var n int64
		if err = json.Unmarshal(raw, &n); err == nil && (n != 0 || spec.zero) {
			uses = [][]string{{strconv.FormatInt(n, 10)}}
		}
	case fileString:
		var s string
		if err = json.Unmarshal(raw, &s); err == nil && s != "" {
			uses = [][]string{{s}}
		}
	case fileList:
		var l []string
		err = json.Unmarshal(raw, &l)
		for _, s := range l {
			uses = append(uses, []string{s})
		}
	case fileLists:
		if err = json.Unmarshal(raw, &uses); err == nil {
			for _, u := range uses {
				if len(u) < 2 {
					return fmt.Errorf("want arrays of at least two strings, got %q", u)
				}
			}
		}
	}
	if err != nil {
		return err
	}
	for _, u := range uses {
		if err := spec.set(a, u); err != nil {
			return err
		}
	}
	return nil
}

// resolve checks the options that depend on each other and resolves the
// addresses (host names with ctx) into the setup.
func (a masterArgs) resolve(ctx context.Context) (masterSetup, error) {
	s := a.setup
	c := &s.Config
	if a.hashPorts {
		if c.Registry.MaxServersPerAddress != 0 {
			return s, fmt.Errorf("%w: --hash-ports and -N exclude each other (as in dpmaster)", errMasterUsage)
		}
		c.Registry.MaxServersPerAddress = -1
	}
	var err error
	if c.Registry.Policy, err = game.ParsePolicy(a.policy...); err != nil {
		return s, fmt.Errorf("%w: --game-policy: %v", errMasterUsage, err)
	}
	if c.Registry.AddrMap, err = a.addrMap(); err != nil {
		return s, err
	}
	if err := a.sockets(ctx, c); err != nil {
		return s, err
	}
	if err := a.masters(ctx, c); err != nil {
		return s, err
	}
	if err := a.aggregation(ctx, c); err != nil {
		return s, err
	}
	return s, a.landmark(&s)
}

// addrMap is -m and --world-map's mappings.
func (a masterArgs) addrMap() (*master.AddrMap, error) {
	var maps []master.Mapping
	for _, m := range a.maps {
		x, err := master.ParseMapping(m)
		if err != nil {
			return nil, fmt.Errorf("%w: -m: %v", errMasterUsage, err)
		}
		maps = append(maps, x)
	}
	if a.worldMap != "" {
		wm, err := master.LoadMappingFile(a.worldMap)
		if err != nil {
			return nil, fmt.Errorf("%w: --world-map: %v", errMasterUsage, err)
		}
		maps = append(maps, wm...)
	}
	am, err := master.NewAddrMap(maps...)
	if err != nil {
		return nil, fmt.Errorf("%w: -m: %v", errMasterUsage, err)
	}
	return am, nil
}

// sockets sets the master and MOTD sockets from -l, -p and --motd-port,
// as dpmaster: without -l, 0.0.0.0 and :: on the port, IPv6 optional.
func (a masterArgs) sockets(ctx context.Context, c *masterd.Config) error {
	port := masterd.DefaultPort
	if a.port != nil {
		port = *a.port
	}
	if len(a.listen) == 0 {
		c.Listen = []netip.AddrPort{
			netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)),
			netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(port)),
		}
		c.OptionalIPv6 = true
	}
	for _, l := range a.listen {
		addrs, err := resolveAddrs(ctx, l, port)
		if err != nil {
			return fmt.Errorf("%w: -l %s: %v", errMasterUsage, l, err)
		}
		c.Listen = append(c.Listen, addrs...)
	}
	motdPort := masterd.DefaultMOTDPort
	if a.motdPort != nil {
		motdPort = *a.motdPort
	}
	if c.Handler.MOTD != "" && motdPort != 0 {
		for _, l := range c.Listen {
			c.MOTDListen = append(c.MOTDListen, netip.AddrPortFrom(l.Addr(), uint16(motdPort)))
		}
	}
	return nil
}

// masters resolves --peer (any port unless given) and --upstream (the
// master port unless given).
func (a masterArgs) masters(ctx context.Context, c *masterd.Config) error {
	for _, p := range a.peers {
		addrs, err := resolveAddrs(ctx, p, 0)
		if err != nil {
			return fmt.Errorf("%w: --peer %s: %v", errMasterUsage, p, err)
		}
		c.Handler.Peers = append(c.Handler.Peers, addrs...)
	}
	for _, u := range a.upstreams {
		addrs, err := resolveAddrs(ctx, u, masterd.DefaultPort)
		if err != nil {
			return fmt.Errorf("%w: --upstream %s: %v", errMasterUsage, u, err)
		}
		c.Handler.Upstreams = append(c.Handler.Upstreams, addrs[0])
	}
	return nil
}

// landmark makes the master a landmark when --landmark-place or
// --landmark-id is given: placed there, reached at --landmark-address
// (else the first -l address), named by --landmark-id, else --fleet-id
// (masterd.Config.Landmark says the rest).
func (a masterArgs) landmark(s *masterSetup) error {
	c := &s.Config
	if a.landmarkPlace == nil && a.landmarkID == "" {
		switch {
		case a.landmarkAddress != "":
			return fmt.Errorf("%w: --landmark-address: only for a landmark (--landmark-place or --landmark-id)", errMasterUsage)
		case len(c.LandmarkPeers) > 0:
			return fmt.Errorf("%w: --landmark-peer: only a landmark (--landmark-place or --landmark-id) pings the others", errMasterUsage)
		}
		return nil
	}
	var lm master.Landmark
	if a.landmarkPlace != nil {
		lm = *a.landmarkPlace
	}
	if len(a.listen) > 0 {
		lm.Address = a.listen[0]
	}
	lm.Address = cmp.Or(a.landmarkAddress, lm.Address)
	lm.ID = cmp.Or(a.landmarkID, s.FleetID)
	if _, err := q3.EncodeLandmarksResponses(cmp.Or(lm.ID, "x"), nil, 0); err != nil {
		return fmt.Errorf("%w: --landmark-id %q: 1 to %d letters, digits or ._:-[]", errMasterUsage, lm.ID, q3.MaxLandmarkIDLen)
	}
	if s.Redis != "" {
		switch {
		case len(c.LandmarkPeers) > 0:
			return fmt.Errorf("%w: --landmark-peer: a fleet's landmarks ping the fleet's other instances (--store); give it to a master alone", errMasterUsage)
		case a.landmarkID != "" && s.FleetID != "" && a.landmarkID != s.FleetID:
			return fmt.Errorf("%w: in a fleet the landmark's id is its --fleet-id: give one of --landmark-id and --fleet-id, or the same", errMasterUsage)
		}
	}
	c.Landmark = &lm
	return nil
}

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
