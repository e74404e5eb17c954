package population

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"sort"
	"time"

	"github.com/scout-discovery/scout/latency"
)

// Game says which game a world is of; it sets the servers' first port.
type Game string

const (
	ET  Game = "et"  // Wolfenstein: Enemy Territory, ports from 27960
	CSS Game = "css" // Counter-Strike: Source, ports from 27015
)

func (g Game) basePort() (uint16, error) {
	switch g {
	case ET:
		return 27960, nil
	case CSS:
		return 27015, nil
	}
	return 0, fmt.Errorf("population: unknown game %q (want et or css)", string(g))
}

// Config says how to build a world. Zero fields take the fitted defaults
// (see serverlists_gen.go) except Servers, Game and Seed.
type Config struct {
	Game    Game
	Servers int    // 1 to MaxServers
	Seed    uint64 // the world is a function of Config

	// CountryZipf, CountryQ and Countries are the country mix: weight
	// (rank+CountryQ)^-CountryZipf over the first Countries countries of the
	// ranking (CountryRank).
	CountryZipf, CountryQ float64
	Countries             int
	// ASPerCountryC, ASPerCountryB: a country with n addresses uses
	// round(C*n^B) hosting ASes (at least 1, at most those it has).
	ASPerCountryC, ASPerCountryB float64
	// Slash16PerASC, Slash16PerASB: an AS with n addresses uses
	// round(C*n^B) of its prefixes.
	Slash16PerASC, Slash16PerASB float64
	// ZipfAS and ZipfSlash16 are the exponents of the Zipf laws of addresses
	// over a country's ASes and over an AS's prefixes.
	ZipfAS, ZipfSlash16 float64
	// ServersPerAddr is the mean number of game servers (ports) per address,
	// geometric, at least 1.
	ServersPerAddr float64
	// Ranking orders the countries of the country mix; nil takes
	// CountryRank (the modern lists' ranking). Fitted sets CountryRank2007.
	Ranking []string
	// HubAddrs: an AS with at least HubAddrs addresses in a country sits in
	// one of the country's hosting hubs (cities weighted by how many
	// QuakeWorld servers sit nearest them, see hubWeight), smaller ones in
	// a city of the country drawn uniformly. Zero places every AS
	// uniformly; a country with no hub places every AS uniformly.
	HubAddrs int
	// Latency is the latency model; zero takes DefaultLatency.
	Latency *Latency
	// Table is the prefix table; nil takes Prefixes2008.
	Table *Table
}

// Fitted returns the calibrated defaults.
func Fitted(g Game, servers int, seed uint64) Config {
	return Config{
		Game: g, Servers: servers, Seed: seed,
		CountryZipf: fitCountryZipf, CountryQ: fitCountryQ, Countries: fitCountries,
		ASPerCountryC: calASPerCountryC, ASPerCountryB: fitASPerCountryB,
		Slash16PerASC: calSlash16PerASC, Slash16PerASB: fitSlash16PerASB,
		ZipfAS: fitZipfAS, ZipfSlash16: fitZipfSlash16,
		ServersPerAddr: calServersPerAddr,
		Ranking:        CountryRank2007(),
		HubAddrs:       calHubAddrs,
	}
}

// FittedVantage returns Fitted with the per-vantage latency residual
// (VantageLatency; see calibrated.go): the worlds of scout-lab sim and of
// EVALUATION.md's tables since that fit. Fitted keeps the residual of all
// city pairs (the worlds of EVALUATION.md and of scout demo before the
// per-vantage fit).
func FittedVantage(g Game, servers int, seed uint64) Config {
	c := Fitted(g, servers, seed)
	l := VantageLatency()
	c.Latency = &l
	return c
}

// Modern returns the model fitted to the modern lists alone (SCUM 2024 and
// QuakeWorld): their placement laws and ports per address, their country
// ranking, and every AS in a uniformly drawn city. Fitted departs from it
// where Table 2 says the paper's 2007 population differed (see
// calibrated.go).
func Modern(g Game, servers int, seed uint64) Config {
	return Config{
		Game: g, Servers: servers, Seed: seed,
		CountryZipf: fitCountryZipf, CountryQ: fitCountryQ, Countries: fitCountries,
		ASPerCountryC: fitASPerCountryC, ASPerCountryB: fitASPerCountryB,
		Slash16PerASC: fitSlash16PerASC, Slash16PerASB: fitSlash16PerASB,
		ZipfAS: fitZipfAS, ZipfSlash16: fitZipfSlash16,
		ServersPerAddr: fitServersPerAddr,
	}
}

// CountryRank returns the ranking of countries the country mix uses.
func CountryRank() []string { return countryRank() }

// Server is one game server of a world.
type Server struct {
	Addr    netip.AddrPort
	Country string
	ASN     uint32
	City    string // the WonderProxy city its AS sits in
}

// World is a population of game servers in the order a master lists them.
type World struct {
	Config  Config
	Servers []Server
	cities  map[string]latency.City // by Country+"/"+Name
	latency Latency
}

// ErrConfig is wrapped by Build's error for a Config it refuses.
var ErrConfig = errors.New("population: invalid config")

// Build makes the world cfg describes. The same Config gives the same world.
func Build(cfg Config) (*World, error) {
	port0, err := cfg.Game.basePort()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if cfg.Servers < 1 || cfg.Servers > MaxServers {
		return nil, fmt.Errorf("%w: %d servers, want 1 to %d", ErrConfig, cfg.Servers, MaxServers)
	}
	ranks := cfg.Ranking
	if ranks == nil {
		ranks = countryRank()
	}
	if cfg.Countries < 1 || cfg.Countries > len(ranks) || cfg.ServersPerAddr < 1 {
		return nil, fmt.Errorf("%w: Countries %d (want 1 to %d), ServersPerAddr %v (want >= 1)", ErrConfig, cfg.Countries, len(ranks), cfg.ServersPerAddr)
	}
	t := cfg.Table
	if t == nil {
		if t, err = Prefixes2008(); err != nil {
			return nil, err
		}
	}
	lat := DefaultLatency()
	if cfg.Latency != nil {
		lat = *cfg.Latency
	}
	w := &World{Config: cfg, cities: map[string]latency.City{}, latency: lat}
	byCountry := map[string][]latency.City{}
	hubCum := map[string][]float64{} // cumulative hub weights over byCountry[cc]
	for _, c := range latency.Cities() {
		w.cities[c.Country+"/"+c.Name] = c
		byCountry[c.Country] = append(byCountry[c.Country], c)
	}
	for cc, cs := range byCountry {
		hw := make([]float64, len(cs))
		var any bool
		for i, c := range cs {
			hw[i] = float64(hubWeight(cc, c.Name))
			any = any || hw[i] > 0
		}
		if any {
			hubCum[cc] = cumulative(hw)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5c0a7))

	// Countries: n_c servers each, drawn from the country mix.
	ranks = ranks[:cfg.Countries]
	cw := make([]float64, len(ranks))
	for i := range cw {
		cw[i] = math.Pow(float64(i+1)+cfg.CountryQ, -cfg.CountryZipf)
	}
	counts := make([]int, len(ranks))
	cum := cumulative(cw)
	for range cfg.Servers {
		counts[pick(rng, cum)]++
	}
	used := map[netip.Addr]bool{}
	for ci, cc := range ranks {
		n := counts[ci]
		if n == 0 {
			continue
		}
		if t.ASes(cc) == 0 || len(byCountry[cc]) == 0 {
			return nil, fmt.Errorf("%w: country %s has no prefixes or no city", ErrConfig, cc)
		}
		// Addresses, each with a geometric number of servers.
		var perAddr []int
		for left := n; left > 0; {
			k := min(geometric(rng, cfg.ServersPerAddr), left)
			perAddr = append(perAddr, k)
			left -= k
		}
		// Hosting ASes: chosen without replacement, weighted by how many
		// prefixes they announce; Zipf over the order chosen.
		all := t.byCountry[cc]
		kAS := clamp(int(math.Round(cfg.ASPerCountryC*math.Pow(float64(len(perAddr)), cfg.ASPerCountryB))), 1, len(all))
		ases := weightedSample(rng, len(all), kAS, func(i int) float64 { return float64(len(all[i].prefixes)) })
		asCum := cumulative(zipf(len(ases), cfg.ZipfAS))
		byAS := make([][]int, len(ases)) // address sizes per chosen AS
		for _, k := range perAddr {
			i := pick(rng, asCum)
			byAS[i] = append(byAS[i], k)
		}
		for i, addrs := range byAS {
			if len(addrs) == 0 {
				continue
			}
			as := all[ases[i]]
			var city latency.City
			if hc := hubCum[cc]; hc != nil && cfg.HubAddrs > 0 && len(addrs) >= cfg.HubAddrs {
				city = byCountry[cc][pick(rng, hc)]
			} else {
				city = byCountry[cc][rng.IntN(len(byCountry[cc]))]
			}
			k16 := clamp(int(math.Round(cfg.Slash16PerASC*math.Pow(float64(len(addrs)), cfg.Slash16PerASB))), 1, len(as.prefixes))
			sites := make([]netip.Prefix, 0, k16)
			for _, j := range rng.Perm(len(as.prefixes))[:k16] {
				sites = append(sites, narrow(rng, as.prefixes[j], 16))
			}
			sCum := cumulative(zipf(len(sites), cfg.ZipfSlash16))
			for _, k := range addrs {
				a, ok := host(rng, sites[pick(rng, sCum)], used)
				if !ok {
					continue // the site is full: drop this address
				}
				used[a] = true
				for port := range k {
					w.Servers = append(w.Servers, Server{
						Addr: netip.AddrPortFrom(a, port0+uint16(port)), Country: cc, ASN: as.asn, City: city.Name,
					})
				}
			}
		}
	}
	// The master's order: no relation to where servers are.
	rng.Shuffle(len(w.Servers), func(i, j int) { w.Servers[i], w.Servers[j] = w.Servers[j], w.Servers[i] })
	return w, nil
}

// RTTs returns the base RTT from p to every server, in master order: what
// a probe would measure without jitter.
func (w *World) RTTs(p Place) []time.Duration {
	out := make([]time.Duration, len(w.Servers))
	for i, s := range w.Servers {
		out[i] = w.latency.rtt(w.Config.Seed, p, s, w.cities[s.Country+"/"+s.City])
	}
	return out
}

// Sites returns the servers as Sites, for Measure.
func (w *World) Sites() []Site {
	out := make([]Site, len(w.Servers))
	for i, s := range w.Servers {
		out[i] = Site{Addr: s.Addr.Addr(), Country: s.Country, ASN: s.ASN}
	}
	return out
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

func zipf(n int, s float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Pow(float64(i+1), -s)
	}
	return w
}

func cumulative(w []float64) []float64 {
	c := make([]float64, len(w))
	var s float64
	for i, v := range w {
		s += v
		c[i] = s
	}
	return c
}

func pick(r *rand.Rand, cum []float64) int {
	x := r.Float64() * cum[len(cum)-1]
	return min(sort.SearchFloat64s(cum, x), len(cum)-1)
}

// geometric draws from {1, 2, ...} with the given mean (>= 1).
func geometric(r *rand.Rand, mean float64) int {
	if mean <= 1 {
		return 1
	}
	p := 1 / mean
	return 1 + int(math.Floor(math.Log(1-r.Float64())/math.Log(1-p)))
}

// weightedSample draws k distinct indices of [0, n) with probabilities
// proportional to weight, in the order drawn (Efraimidis-Spirakis keys).
func weightedSample(r *rand.Rand, n, k int, weight func(int) float64) []int {
	type kv struct {
		key float64
		i   int
	}
	keys := make([]kv, n)
	for i := range keys {
		keys[i] = kv{math.Pow(r.Float64(), 1/max(weight(i), 1e-9)), i}
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].key != keys[b].key {
			return keys[a].key > keys[b].key
		}
		return keys[a].i < keys[b].i
	})
	out := make([]int, k)
	for j := range out {
		out[j] = keys[j].i
	}
	return out
}

// narrow returns p if it is /bits or longer, else a random /bits inside it.
func narrow(r *rand.Rand, p netip.Prefix, bits int) netip.Prefix {
	if p.Bits() >= bits {
		return p
	}
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= uint32(r.IntN(1<<(bits-p.Bits()))) << (32 - bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits)
}

// host draws an unused host address in p, avoiding .0 and .255; false after
// a bounded number of tries.
func host(r *rand.Rand, p netip.Prefix, used map[netip.Addr]bool) (netip.Addr, bool) {
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	size := uint64(1) << (32 - p.Bits())
	for range 64 {
		x := v + uint32(r.Uint64N(size))
		if x&0xff == 0 || x&0xff == 0xff {
			continue
		}
		h := netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
		if !used[h] && !Reserved(h) {
			return h, true
		}
	}
	return netip.Addr{}, false
}

// Churned returns the world some time later: share (0 to 1) of its
// servers, drawn from seed, have left, and as many have joined, drawn from
// a world of the same configuration built with seed (a joining server at
// an address already listed is left out). The servers that stay keep
// their addresses and RTTs; the master's order is drawn again.
func (w *World) Churned(share float64, seed uint64) (*World, error) {
	if !(share >= 0 && share <= 1) {
		return nil, fmt.Errorf("%w: churn %v, want 0 to 1", ErrConfig, share)
	}
	cfg := w.Config
	cfg.Seed = seed
	other, err := Build(cfg)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a2))
	n := int(math.Round(share * float64(len(w.Servers))))
	out := &World{Config: w.Config, cities: w.cities, latency: w.latency}
	listed := map[netip.AddrPort]bool{}
	for _, i := range rng.Perm(len(w.Servers))[n:] {
		out.Servers = append(out.Servers, w.Servers[i])
		listed[w.Servers[i].Addr] = true
	}
	for _, s := range other.Servers[:min(n, len(other.Servers))] {
		if !listed[s.Addr] {
			out.Servers = append(out.Servers, s)
		}
	}
	rng.Shuffle(len(out.Servers), func(i, j int) { out.Servers[i], out.Servers[j] = out.Servers[j], out.Servers[i] })
	return out, nil
}
