package world

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Spec describes a world to generate. The same Spec gives the same world.
type Spec struct {
	// Servers is the number of servers, 1 to MaxServers.
	Servers int
	// Games is the mix of games; nil means all games equally.
	Games Mix
	// Full and Empty are the shares of servers with every slot taken and
	// with no player; the rest have 1 to max-1 players. Full+Empty <= 1.
	Full, Empty float64
	// RTTMin and RTTMax bound the added round-trip times. Each hosting
	// network draws a base RTT uniformly from [RTTMin, RTTMax]; its servers
	// are within 1 ms of it, clamped to the range.
	RTTMin, RTTMax time.Duration
	// Jitter and Loss are given to every server's Link.
	Jitter time.Duration
	Loss   float64
	// Gone is the share of servers that answer their masters only
	// (Server.Gone), drawn from a stream of its own: a seed gives the
	// same servers whatever Gone is.
	Gone float64
	// Seed seeds the generator (PCG).
	Seed uint64
}

// Generator constants.
const (
	// BotShare is the chance that a generated player is a bot.
	BotShare = 0.25
	// MaxServersPerHost bounds how many servers share one public IP (on
	// consecutive ports from the game's usual port), as on game hosting
	// machines.
	MaxServersPerHost = 4
	// MaxHostsPerNetwork bounds the hosts drawn from one /24 hosting
	// network: servers cluster in few networks, as on the Internet (a
	// world spread evenly over the address space does not behave like the
	// real one: adaptive discovery clusters by network).
	MaxHostsPerNetwork = 16
)

// Share is one game's weight in a Mix.
type Share struct {
	Game   Game
	Weight int
}

// Mix is a list of games with weights.
type Mix []Share

// ParseMix reads "q3a:50,et:30,css:20" (weights are relative, not
// necessarily percentages). A game without ":weight" has weight 1.
func ParseMix(s string) (Mix, error) {
	var m Mix
	seen := map[Game]bool{}
	for _, part := range strings.Split(s, ",") {
		name, w, hasW := strings.Cut(strings.TrimSpace(part), ":")
		g := Game(name)
		if g.family() == 0 {
			return nil, fmt.Errorf("unknown game %q (known: %v)", name, Games)
		}
		if seen[g] {
			return nil, fmt.Errorf("game %q given twice", name)
		}
		seen[g] = true
		weight := 1
		if hasW {
			n, err := strconv.Atoi(w)
			if err != nil || n < 0 || n > 1_000_000 {
				return nil, fmt.Errorf("bad weight %q for %s", w, name)
			}
			weight = n
		}
		m = append(m, Share{g, weight})
	}
	return m, nil
}

// String writes the mix as ParseMix reads it.
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, s := range m {
		parts[i] = fmt.Sprintf("%s:%d", s.Game, s.Weight)
	}
	return strings.Join(parts, ",")
}

// ParseRange reads "10ms-400ms", or one duration for a fixed value.
func ParseRange(s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = time.ParseDuration(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = time.ParseDuration(b); err != nil {
			return 0, 0, err
		}
	}
	if lo < 0 || hi < lo || hi > MaxRTT {
		return 0, 0, fmt.Errorf("range %q: want 0 <= low <= high <= %v", s, MaxRTT)
	}
	return lo, hi, nil
}

// profile is what the generator knows about a game.
type profile struct {
	port      uint16
	title     string
	maps      []string
	gameTypes []string
	slots     []int
}

var profiles = map[Game]profile{
	Q3A:  {27960, "Quake III Arena", []string{"q3dm6", "q3dm17", "q3tourney2", "q3ctf1", "q3dm7"}, []string{"0", "1", "3", "4"}, []int{8, 12, 16, 20}},
	ET:   {27960, "Enemy Territory", []string{"oasis", "battery", "goldrush", "radar", "railgun", "fueldump"}, []string{"2", "3", "4", "5"}, []int{16, 20, 24, 32}},
	RTCW: {27960, "Wolfenstein", []string{"mp_beach", "mp_base", "mp_village", "mp_assault"}, []string{"5", "6", "7"}, []int{12, 16, 24}},
	OA:   {27960, "OpenArena", []string{"oa_dm1", "oa_dm4", "oasago2", "oa_ctf4ish"}, []string{"0", "1", "3", "4"}, []int{8, 12, 16}},
	Q4:   {28004, "Quake 4", []string{"game/mp/q4dm1", "game/mp/q4dm2", "game/mp/q4dm5", "game/mp/q4ctf1"}, []string{"DM", "Tourney", "Team DM", "CTF"}, []int{8, 12, 16}},
	UT3:  {6500, "UT3", []string{"DM-Deck", "DM-ShangriLa", "CTF-Coret", "VCTF-Suspense"}, []string{"UTGame.UTDeathmatch", "UTGame.UTTeamGame", "UTGameContent.UTVehicleCTFGame_Content"}, []int{12, 16, 24, 32}},
	CSS:  {27015, "Counter-Strike: Source", []string{"de_dust2", "de_inferno", "cs_office", "de_nuke"}, []string{""}, []int{16, 20, 24, 32}},
}

var (
	hostWords   = []string{"Frag", "Rail", "Clan", "Insane", "Old School", "Pub", "Elite", "Noob", "Midnight", "Nordic"}
	playerNames = []string{"Sarge", "Grism", "Kyonshi", "Major", "Visor", "Anarki", "Klesk", "Doom", "Phobos", "Slash", "Xaero", "Uriel", "Hunter", "Razor", "Bitterman", "Lucy"}
)

// Generate builds a world from spec, deterministically.
func Generate(spec Spec) (World, error) {
	if spec.Servers < 1 || spec.Servers > MaxServers {
		return World{}, fmt.Errorf("world: %d servers, want 1..%d", spec.Servers, MaxServers)
	}
	if spec.Full < 0 || spec.Empty < 0 || spec.Full+spec.Empty > 1 {
		return World{}, fmt.Errorf("world: full %v + empty %v must be shares summing to at most 1", spec.Full, spec.Empty)
	}
	if spec.RTTMin < 0 || spec.RTTMax < spec.RTTMin || spec.RTTMax > MaxRTT || spec.Jitter < 0 {
		return World{}, fmt.Errorf("world: bad delay range %v-%v or jitter %v", spec.RTTMin, spec.RTTMax, spec.Jitter)
	}
	if !(spec.Gone >= 0 && spec.Gone <= 1) {
		return World{}, fmt.Errorf("world: gone share %v not in 0..1", spec.Gone)
	}
	if !(spec.Loss >= 0 && spec.Loss <= 1) {
		return World{}, fmt.Errorf("world: loss %v not in 0..1", spec.Loss)
	}
	mix := spec.Games
	if len(mix) == 0 {
		for _, g := range Games {
			mix = append(mix, Share{g, 1})
		}
	}
	total := 0
	for _, s := range mix {
		total += s.Weight
	}
	if total == 0 {
		return World{}, fmt.Errorf("world: game mix %v has no weight", mix)
	}

	rng := rand.New(rand.NewPCG(spec.Seed, spec.Seed^0x5c0_07_3a11d))
	gone := rand.New(rand.NewPCG(spec.Seed, spec.Seed^0x60_9e))
	w := World{Version: FormatVersion, Seed: spec.Seed, Servers: make([]Server, 0, spec.Servers)}
	usedNets := map[netip.Prefix]bool{}
	usedHosts := map[netip.Addr]bool{}
	var (
		network       netip.Prefix
		netRTT        time.Duration
		hostsLeft     int
		host          netip.Addr
		onHost, slots int
		hostIndex     int
	)
	for len(w.Servers) < spec.Servers {
		if onHost == slots { // next host
			if hostsLeft == 0 {
				network = drawNetwork(rng, usedNets)
				netRTT = spec.RTTMin + time.Duration(rng.Int64N(int64(spec.RTTMax-spec.RTTMin)+1))
				hostsLeft = 1 + rng.IntN(MaxHostsPerNetwork)
			}
			hostsLeft--
			base := network.Addr().As4()
			for {
				base[3] = byte(2 + rng.IntN(252))
				if h := netip.AddrFrom4(base); !usedHosts[h] {
					host = h
					usedHosts[h] = true
					break
				}
			}
			onHost, slots = 0, 1+rng.IntN(MaxServersPerHost)
			if hostIndex >= maxLoopbackHosts {
				return World{}, fmt.Errorf("world: out of loopback addresses")
			}
			hostIndex++
		}
		g := pickGame(rng, mix, total)
		p := profiles[g]
		port := p.port + uint16(onHost)
		onHost++
		pub := netip.AddrPortFrom(host, port)
		rtt := netRTT + time.Duration(rng.Int64N(int64(2*time.Millisecond)+1)) - time.Millisecond
		rtt = min(max(rtt, spec.RTTMin), spec.RTTMax)
		s := Server{
			Public:     pub,
			Loopback:   netip.AddrPortFrom(loopbackHost(hostIndex-1), port),
			Game:       g,
			Hostname:   fmt.Sprintf("%s %s #%d", hostWords[rng.IntN(len(hostWords))], p.title, 1+rng.IntN(99)),
			Map:        p.maps[rng.IntN(len(p.maps))],
			GameType:   p.gameTypes[rng.IntN(len(p.gameTypes))],
			MaxClients: p.slots[rng.IntN(len(p.slots))],
			Link:       Link{RTT: Duration(rtt), Jitter: Duration(spec.Jitter), Loss: spec.Loss},
		}
		var n int
		switch r := rng.Float64(); {
		case r < spec.Full:
			n = s.MaxClients
		case r < spec.Full+spec.Empty:
			n = 0
		default:
			n = 1 + rng.IntN(max(s.MaxClients-1, 1))
		}
		for i := range n {
			pl := Player{
				Name:  fmt.Sprintf("%s%d", playerNames[rng.IntN(len(playerNames))], i),
				Score: rng.IntN(40) - 2,
				Ping:  15 + rng.IntN(180),
			}
			if rng.Float64() < BotShare {
				pl.Bot, pl.Ping = true, 0
			}
			s.Players = append(s.Players, pl)
		}
		// Its own stream: the same seed gives the same servers, gone or not.
		s.Gone = spec.Gone > 0 && gone.Float64() < spec.Gone
		w.Servers = append(w.Servers, s)
	}
	return w, w.Validate()
}

func pickGame(rng *rand.Rand, mix Mix, total int) Game {
	r := rng.IntN(total)
	for _, s := range mix {
		if r < s.Weight {
			return s.Game
		}
		r -= s.Weight
	}
	return mix[len(mix)-1].Game
}

// drawNetwork draws a /24 whose every address is public unicast and that
// was not drawn before.
func drawNetwork(rng *rand.Rand, used map[netip.Prefix]bool) netip.Prefix {
	for {
		a := netip.AddrFrom4([4]byte{byte(1 + rng.IntN(223)), byte(rng.IntN(256)), byte(rng.IntN(256)), 0})
		p := netip.PrefixFrom(a, 24)
		if used[p] || !IsPublic(a) || !IsPublic(p.Addr().Next()) {
			continue
		}
		used[p] = true
		return p
	}
}
