// Command playable says how many game servers are playable (RTT under
// 200 ms) from each of the paper's clients, in the real server lists and
// in the simulator's mesh worlds, so that a far client's probes as a share
// of the full probe's (5% is the usual aim) can be read against its floor:
// a client must probe every playable server, so where more than 5% are
// playable, 5% cannot be met.
//
//	go run ./lab/sim/internal/playable -data ../shared/data -seed 11 -seeds 20
//
// The real lists, each server at a WonderProxy city and its RTT the
// measured city-to-city mesh (WonderProxy, July 2020) plus the client's
// access delay (population.Places) plus the mean of the worlds' server-side
// offsets (population.DefaultLatency: 10 + 5 ms):
//
//   - QuakeWorld (vikpe/qw-servers-geoip, 233 servers): each server at the
//     WonderProxy city of its country nearest its own coordinates;
//   - SCUM (opengsq, 2024-02-05, 7,519 entries): each address's country from
//     GeoLite Country 2019-12-24, at the country's main city
//     (latency.MainCity); per distinct address and per entry (port).
//
// The worlds are scout-lab sim --mesh's: population.FittedVantage worlds of
// 2,800 (ET) and 22,000 (CS:S) servers with World.MeshRTTs, the RTTs the
// simulator's oracle uses (before jitter), so the share printed per seed
// is the oracle's probe share.
package main

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/latency"
)

const playable = 200 * time.Millisecond

var clients = []string{"AU", "JP", "CH", "DE"}

// site is one server of a real list: where it sits and its region.
type site struct {
	city   latency.City
	region string
}

func main() {
	data := flag.String("data", "../shared/data", "the shared data folder")
	seed := flag.Uint64("seed", 11, "the first world seed")
	seeds := flag.Int("seeds", 20, "how many seeds")
	flag.Parse()
	m, err := mesh.LoadWonderProxy(*data)
	if err != nil {
		log.Fatal(err)
	}
	ml := population.MeshLatency{Mesh: m.ByCity()}
	lat := population.DefaultLatency()
	offsets := lat.ASOffset + lat.Slash16Offset

	qw, err := quakeWorld(filepath.Join(*data, "quakeworld_ip_to_geo.json"))
	if err != nil {
		log.Fatal(err)
	}
	perAddr, perEntry, err := scum(*data)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Real lists: share of servers under 200 ms (mesh + access + %v of server-side offsets), by the server's region; and the lists' regions\n", offsets)
	for _, l := range []struct {
		name  string
		sites []site
	}{{"QuakeWorld", qw}, {"SCUM, per address", perAddr}, {"SCUM, per entry", perEntry}} {
		fmt.Printf("%-18s %5d servers:", l.name, len(l.sites))
		for _, k := range clients {
			p := population.Places()[k]
			var ds []time.Duration
			var rs []string
			for _, s := range l.sites {
				d, _ := ml.CityRTT(p.City, s.city)
				ds = append(ds, p.Access+d+offsets)
				rs = append(rs, s.region)
			}
			fmt.Printf("  %s %s", k, share(ds, rs))
		}
		all := make([]time.Duration, len(l.sites))
		rs := make([]string, len(l.sites))
		for i, s := range l.sites {
			rs[i] = s.region
		}
		fmt.Printf("  regions %s\n", share(all, rs))
	}

	au := population.Places()["AU"]
	var reach []string
	for _, c := range latency.Cities() {
		if d, _ := ml.CityRTT(au.City, c); c.Country == "US" && au.Access+d+offsets < playable {
			reach = append(reach, c.Name)
		}
	}
	jp := population.Places()["JP"]
	var usFar []string
	var us int
	for _, c := range latency.Cities() {
		if c.Country != "US" {
			continue
		}
		us++
		if d, _ := ml.CityRTT(jp.City, c); jp.Access+d+offsets >= playable {
			usFar = append(usFar, c.Name)
		}
	}
	var qwUS, qwReach int
	for _, st := range qw {
		if st.city.Country == "US" {
			qwUS++
			if d, _ := ml.CityRTT(au.City, st.city); au.Access+d+offsets < playable {
				qwReach++
			}
		}
	}
	fmt.Printf("\nQuakeWorld's US servers in reach of Melbourne: %d of %d (%.1f%%)", qwReach, qwUS, 100*float64(qwReach)/float64(max(qwUS, 1)))
	fmt.Printf("\nUS cities under 200 ms (same sum) from Melbourne: %v; from Tokyo: %d of %d (not: %v)\n", reach, us-len(usFar), us, usFar)

	fmt.Printf("\nMesh worlds, seeds %d to %d: share of servers under 200 ms (the oracle's probe share), of which US; US servers in reach of Melbourne as a share of the US's; the worlds' regions\n", *seed, *seed+uint64(*seeds)-1)
	for _, g := range []struct {
		game population.Game
		n    int
	}{{population.ET, population.SizeET}, {population.CSS, population.SizeCSS}} {
		over := map[string]int{}
		var reachSum float64
		for s := *seed; s < *seed+uint64(*seeds); s++ {
			w, err := population.Build(population.FittedVantage(g.game, g.n, s))
			if err != nil {
				log.Fatal(err)
			}
			line := fmt.Sprintf("%-3s seed %2d:", g.game, s)
			rs := make([]string, len(w.Servers))
			for i, sv := range w.Servers {
				rs[i] = latency.Region(sv.Country)
			}
			for _, k := range clients[:2] {
				rtts, _ := w.MeshRTTs(ml, population.Places()[k])
				var n, nUS, us int
				for i, d := range rtts {
					isUS := w.Servers[i].Country == "US"
					if isUS {
						us++
					}
					if d < playable {
						n++
						if isUS {
							nUS++
						}
					}
				}
				pct := 100 * float64(n) / float64(len(rtts))
				if pct > 5 {
					over[k]++
				}
				line += fmt.Sprintf("  %s %5.1f%% (US %4.1f%%", k, pct, 100*float64(nUS)/float64(len(rtts)))
				if k == "AU" {
					r := 100 * float64(nUS) / float64(max(us, 1))
					reachSum += r
					line += fmt.Sprintf(", %4.1f%% of the US's", r)
				}
				line += ")"
			}
			fmt.Printf("%s  regions %s\n", line, share(make([]time.Duration, len(rs)), rs))
		}
		fmt.Printf("%s: more than 5%% playable on %d of %d seeds from Melbourne, %d of %d from Tokyo; US servers in reach of Melbourne, mean %.1f%% of the US's\n", g.game, over["AU"], *seeds, over["JP"], *seeds, reachSum/float64(*seeds))
	}
}

// share formats the share of ds under 200 ms, with each region's part.
func share(ds []time.Duration, regions []string) string {
	by := map[string]int{}
	var n int
	for i, d := range ds {
		if d < playable {
			n++
			by[regions[i]]++
		}
	}
	var parts []string
	for r, c := range by {
		parts = append(parts, fmt.Sprintf("%s %.1f", cmp.Or(r, "?"), 100*float64(c)/float64(len(ds))))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%.1f%% [%s]", 100*float64(n)/float64(max(len(ds), 1)), strings.Join(parts, " "))
}

// quakeWorld reads the QuakeWorld list: each server at the WonderProxy city
// of its country nearest its coordinates.
func quakeWorld(path string) ([]site, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qw map[string]struct {
		CC     string    `json:"cc"`
		Coords []float64 `json:"coordinates"`
	}
	if err := json.Unmarshal(b, &qw); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var out []site
	for _, ip := range slices.Sorted(maps.Keys(qw)) {
		v := qw[ip]
		if len(v.Coords) != 2 {
			continue
		}
		best, bd := latency.City{}, math.Inf(1)
		for _, c := range latency.Cities() {
			if d := latency.GreatCircleKm(v.Coords[0], v.Coords[1], c.Lat, c.Lon); c.Country == v.CC && d < bd {
				best, bd = c, d
			}
		}
		if !math.IsInf(bd, 1) {
			out = append(out, site{best, latency.Region(v.CC)})
		}
	}
	return out, nil
}

// scum reads the SCUM master list, each address at its country's main
// city (GeoLite Country 2019-12-24), per distinct address and per entry.
func scum(dir string) (perAddr, perEntry []site, err error) {
	type span struct {
		lo, hi uint32
		cc     string
	}
	f, err := os.Open(filepath.Join(dir, "geolite_country_ipv4_20191224.csv.gz"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, err
	}
	u32 := func(a netip.Addr) uint32 {
		b := a.As4()
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}
	var spans []span
	sc := bufio.NewScanner(gz)
	for sc.Scan() {
		p := strings.Split(sc.Text(), ",")
		if len(p) != 3 {
			continue
		}
		lo, e1 := netip.ParseAddr(p[0])
		hi, e2 := netip.ParseAddr(p[1])
		if e1 == nil && e2 == nil && lo.Is4() && hi.Is4() {
			spans = append(spans, span{u32(lo), u32(hi), p[2]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	country := func(a netip.Addr) string {
		x := u32(a)
		i := sort.Search(len(spans), func(i int) bool { return spans[i].hi >= x })
		if i < len(spans) && spans[i].lo <= x {
			return spans[i].cc
		}
		return ""
	}
	s, err := os.Open(filepath.Join(dir, "scum_master_list_2024-02-05.csv"))
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	seen := map[netip.Addr]bool{}
	ls := bufio.NewScanner(s)
	for ls.Scan() {
		a, err := netip.ParseAddr(strings.SplitN(ls.Text(), ",", 2)[0])
		if err != nil || !a.Is4() {
			continue // the header
		}
		cc := country(a)
		c, ok := latency.MainCity(cc)
		if !ok {
			continue // not found, EU, or a country without a city
		}
		st := site{c, latency.Region(cc)}
		perEntry = append(perEntry, st)
		if !seen[a] {
			seen[a] = true
			perAddr = append(perAddr, st)
		}
	}
	return perAddr, perEntry, ls.Err()
}
