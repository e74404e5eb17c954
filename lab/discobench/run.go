package discobench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/discover"
)

// RunTimeout bounds one client run.
const RunTimeout = 5 * time.Minute

// Measurement is one client run against an Env.
type Measurement struct {
	Name string `json:"name"`
	// Wall is the time from starting the client to its exit.
	Wall time.Duration `json:"wall"`
	// Listed is what the master listed; Found the servers the client
	// reported as answering, of which Known are servers of the world
	// (others: the real OpenArena server of an interop test).
	Listed int `json:"listed"`
	Found  int `json:"found"`
	Known  int `json:"known"`
	// Probes are the datagrams the world received during the run; Bytes
	// the request payload bytes the client sent to the servers, counted
	// as BytesFrom says: "tap" (Traffic.ToServers), "client" (scout's own
	// count) or "estimate" (quakestat's probes times its request size).
	Probes    uint64 `json:"probes"`
	Bytes     int64  `json:"bytes"`
	BytesFrom string `json:"bytes_from"`
	// Traffic is what the client exchanged, as loopback carried it; nil
	// without the tap (Env.TapErr).
	Traffic *Traffic `json:"traffic,omitempty"`
	// WorldLateP99 and WorldLateP999 are how late the world's datagrams
	// left after their due time (world.Stats), over everything it sent
	// since it started, read at the end of the run: the emulator's own
	// share of the RTT error.
	WorldLateP99  time.Duration `json:"world_late_p99"`
	WorldLateP999 time.Duration `json:"world_late_p999"`
	// ClientProbes is the client's own count of requests (scout only).
	ClientProbes int `json:"client_probes,omitempty"`
	// RTTErrP50 and RTTErrP99 are quantiles of reported minus injected
	// RTT over the Known servers found; RTTErrMax the largest.
	RTTErrP50 time.Duration `json:"rtt_err_p50"`
	RTTErrP99 time.Duration `json:"rtt_err_p99"`
	RTTErrMax time.Duration `json:"rtt_err_max"`
	// Playable counts the Known servers found whose injected RTT is under
	// PlayableRTT; LastPlayable is when the last of their answers reached
	// the client, from the client's start (the world's record of its
	// replies, world.Emulator.LastReply): what a player waits for.
	Playable     int           `json:"playable"`
	LastPlayable time.Duration `json:"last_playable"`
	// With an access link (Config.Access): LinkBound is the least time
	// the run could take, the wire bytes of every reply from the servers
	// (the tap's count) over the link's rate plus the world's largest
	// RTT; zero without the tap. LinkDropped counts the replies to any
	// client the link's full queue dropped during the run, LinkWaitMean
	// their mean queueing delay.
	LinkBound    time.Duration `json:"link_bound,omitempty"`
	LinkDropped  uint64        `json:"link_dropped,omitempty"`
	LinkWaitMean time.Duration `json:"link_wait_mean,omitempty"`

	started time.Time // the client's start
}

// PlayableRTT is the RTT under which a server counts as playable for
// Measurement.LastPlayable: scout servers' default auto-stop threshold.
const PlayableRTT = 200 * time.Millisecond

// Completeness is Found/Listed.
func (m Measurement) Completeness() float64 {
	if m.Listed == 0 {
		return 0
	}
	return float64(m.Found) / float64(m.Listed)
}

// Player is one player as a client reported it.
type Player struct {
	Name  string `json:"name"`
	Score int    `json:"score"`
	Ping  int    `json:"ping"`
}

// Server is one server as a client reported it, in the fields scout and
// quakestat both have. Names are without colour codes.
type Server struct {
	Address    netip.AddrPort
	Name       string
	Map        string
	NumPlayers int
	MaxPlayers int
	GameType   string
	Protocol   string
	Players    []Player // nil when none were reported
	RTT        time.Duration
	Answered   bool
}

// scoutSummary is the part of the {"type":"summary"} line of `scout
// servers --json` read here.
type scoutSummary struct {
	Probes   int   `json:"probes"`
	BytesOut int64 `json:"bytes_out"`
}

// Scout runs `bin servers --json --master <master> args...` (bin is a
// scout binary) and measures it.
func (e *Env) Scout(ctx context.Context, name, bin string, args ...string) (Measurement, []Server, error) {
	full := append([]string{"servers", "--json", "--live", "off", "--master", e.Master.String()}, args...)
	out, m, err := e.run(ctx, name, bin, full...)
	if err != nil {
		return m, nil, err
	}
	var servers []Server
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// decode reads the line into v.
		decode := func(v any) error {
			if err := json.Unmarshal(sc.Bytes(), v); err != nil {
				return fmt.Errorf("%s: line %q: %w", name, sc.Text(), err)
			}
			return nil
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := decode(&head); err != nil {
			return m, nil, err
		}
		switch head.Type {
		case "summary":
			var l scoutSummary
			if err := decode(&l); err != nil {
				return m, nil, err
			}
			m.ClientProbes = l.Probes
			if m.Traffic == nil {
				m.Bytes, m.BytesFrom = l.BytesOut, "client"
			}
		case "server":
			var l discover.ServerJSON
			if err := decode(&l); err != nil {
				return m, nil, err
			}
			a, err := netip.ParseAddrPort(l.Address)
			if err != nil {
				return m, nil, fmt.Errorf("%s: address %q: %w", name, l.Address, err)
			}
			s := Server{Address: a, Name: l.NamePlain, Map: l.Map, NumPlayers: l.NumPlayers, MaxPlayers: l.MaxPlayers,
				GameType: l.GameType, Protocol: l.Protocol, RTT: time.Duration(math.Round(l.RTTms * 1e6)), Answered: l.RTTms > 0}
			if l.Players != nil {
				s.Players = []Player{}
				for _, p := range *l.Players {
					s.Players = append(s.Players, Player{Name: p.NamePlain, Score: p.Score, Ping: p.Ping})
				}
			}
			servers = append(servers, s)
		}
	}
	e.judge(&m, servers)
	return m, servers, nil
}

// qstatServer is one server of `quakestat -json` output.
type qstatServer struct {
	Protocol   string            `json:"protocol"`
	Address    string            `json:"address"`
	Status     string            `json:"status"`
	Name       string            `json:"name"`
	Map        string            `json:"map"`
	NumPlayers int               `json:"numplayers"`
	MaxPlayers int               `json:"maxplayers"`
	Ping       int               `json:"ping"`
	Rules      map[string]string `json:"rules"`
	Players    []Player          `json:"players"`
}

// Quakestat runs `quakestat -json flags... -q3m,71 <master>` and
// measures it. flags are quakestat options only (-R, -P, -maxsim N, ...):
// the master is the only address it is given, and Quakestat first checks
// that the master lists loopback addresses alone. reqSize is the size of
// one quakestat server request (see QuakestatRequest), for Bytes.
func (e *Env) Quakestat(ctx context.Context, name string, reqSize int, flags ...string) (Measurement, []Server, error) {
	if err := e.CheckLoopback(); err != nil {
		return Measurement{Name: name}, nil, err
	}
	path, err := exec.LookPath("quakestat")
	if err != nil {
		return Measurement{Name: name}, nil, err
	}
	args := append(append([]string{"-json"}, flags...), "-q3m,71", e.Master.String())
	out, m, err := e.run(ctx, name, path, args...)
	if err != nil {
		return m, nil, err
	}
	var qs []qstatServer
	if err := json.Unmarshal(out, &qs); err != nil {
		return m, nil, fmt.Errorf("%s: quakestat -json output: %w", name, err)
	}
	var servers []Server
	for _, q := range qs {
		if q.Protocol != "q3s" {
			continue // the master's own entry
		}
		a, err := netip.ParseAddrPort(q.Address)
		if err != nil {
			return m, nil, fmt.Errorf("%s: address %q: %w", name, q.Address, err)
		}
		s := Server{Address: a, Name: q.Name, Map: q.Map, NumPlayers: q.NumPlayers, MaxPlayers: q.MaxPlayers,
			GameType: q.Rules["g_gametype"], Protocol: q.Rules["protocol"], Players: q.Players,
			RTT: time.Duration(q.Ping) * time.Millisecond, Answered: q.Status == "online"}
		if s.GameType == "" {
			s.GameType = q.Rules["gametype"]
		}
		servers = append(servers, s)
	}
	if m.Traffic == nil {
		m.Bytes, m.BytesFrom = int64(m.Probes)*int64(reqSize), "estimate"
	}
	e.judge(&m, servers)
	return m, servers, nil
}

// run runs a client with a bounded lifetime and counts what the world
// received meanwhile, and the traffic when the tap works.
func (e *Env) run(ctx context.Context, name, path string, args ...string) ([]byte, Measurement, error) {
	m := Measurement{Name: name, Listed: len(e.Listed())}
	ctx, cancel := context.WithTimeout(ctx, RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	// Every run starts from an empty user cache: scout servers' memory of
	// earlier runs would change what a later round measures.
	cache, err := os.MkdirTemp("", "discobench-cache-")
	if err != nil {
		return nil, m, err
	}
	defer os.RemoveAll(cache)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if e.tap != nil {
		e.tap.begin()
	}
	before := e.received()
	st0 := e.Emulator.Stats()
	start := time.Now()
	m.started = start
	err = cmd.Run()
	m.Wall = time.Since(start)
	m.Probes = e.received() - before
	st := e.Emulator.Stats()
	m.WorldLateP99, m.WorldLateP999 = st.LatenessP99, st.LatenessP999
	if e.access.Rate > 0 {
		m.LinkDropped = st.LinkDropped - st0.LinkDropped
		if n := st.LinkShaped - st0.LinkShaped; n > 0 {
			sum := float64(st.LinkWaitMean)*float64(st.LinkShaped) - float64(st0.LinkWaitMean)*float64(st0.LinkShaped)
			m.LinkWaitMean = time.Duration(sum / float64(n))
		}
	}
	if e.tap != nil {
		pkts, drops, over, terr := e.tap.end()
		if terr == nil {
			t := classify(pkts, e.Master, func(a netip.AddrPort) bool { _, ok := e.truth[a]; return ok })
			t.Drops, t.Overflow = drops, over
			m.Traffic = &t
			m.Bytes, m.BytesFrom = int64(t.ToServers.Payload), "tap"
			if e.access.Rate > 0 {
				m.LinkBound = time.Duration(float64(t.FromServers.Wire())*8/e.access.Rate*float64(time.Second)) + e.MaxRTT()
			}
		} else if err == nil {
			err = terr
		}
	}
	if err != nil {
		return nil, m, fmt.Errorf("%s: %s %s: %w\nstderr: %s", name, path, strings.Join(args, " "), err, clip(stderr.String()))
	}
	return stdout.Bytes(), m, nil
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// judge fills Found, Known and the RTT error quantiles.
func (e *Env) judge(m *Measurement, servers []Server) {
	var errs []time.Duration
	for _, s := range servers {
		if !s.Answered {
			continue
		}
		m.Found++
		w, ok := e.Server(s.Address)
		if !ok {
			continue
		}
		m.Known++
		errs = append(errs, s.RTT-time.Duration(w.Link.RTT))
		if time.Duration(w.Link.RTT) >= PlayableRTT {
			continue
		}
		m.Playable++
		if at, ok := e.Emulator.LastReply(s.Address); ok && !at.Before(m.started) {
			m.LastPlayable = max(m.LastPlayable, at.Sub(m.started))
		}
	}
	if len(errs) == 0 {
		return
	}
	slices.Sort(errs)
	m.RTTErrP50 = Quantile(errs, 0.50)
	m.RTTErrP99 = Quantile(errs, 0.99)
	m.RTTErrMax = errs[len(errs)-1]
}

// Quantile returns the q-quantile of sorted (nearest rank).
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// QuakestatRequest returns the request quakestat sends to a Quake III
// server (-q3s) with flags, captured on a scripted socket on 127.0.0.1
// that never answers.
func QuakestatRequest(ctx context.Context, flags ...string) ([]byte, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(append([]string{}, flags...), "-retry", "1", "-timeout", "1", "-q3s", c.LocalAddr().String())
	cmd := exec.CommandContext(ctx, "quakestat", args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer cmd.Wait()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return nil, fmt.Errorf("quakestat sent nothing: %w", err)
	}
	return append([]byte(nil), buf[:n]...), nil
}
