package main

import (
	"encoding/json"
	"fmt"
	"log"
	"math"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/scout-discovery/scout/lab/population"
)

// fitServerLists fits the world's placement to the real server lists (SCUM
// of 2024-02-05 and QuakeWorld's, geolocated with g and RouteViews 2014
// origin ASes) and to Table 2's country counts, and writes to w the hosting
// hubs (hubWeight), the lists' measured concentration and the laws fitted
// to it, the country order (countryRank, then by space, the routed space of
// each country of known) and the country mix; and to model each country's
// main city (latency.MainCity), the one of its hubs with the most servers.
func fitServerLists(model, w *strings.Builder, p func(string) string, cities []city, g *geolite, known map[string]bool, space map[string]float64) error {
	p14, err := loadPyASN(p("ipasn_20140513.dat.gz"))
	if err != nil {
		return err
	}
	t14 := asTable{}
	for _, e := range p14 {
		t14[e.p] = e.asn
	}
	var scumIPs []netip.Addr
	perIP := map[netip.Addr]int{}
	srows, err := readCSV(p("scum_master_list_2024-02-05.csv"))
	if err != nil {
		return err
	}
	for _, r := range srows {
		a, err := netip.ParseAddr(r[0])
		if err != nil {
			return err
		}
		if perIP[a] == 0 {
			scumIPs = append(scumIPs, a)
		}
		perIP[a]++
	}
	qwf, err := os.ReadFile(p("quakeworld_ip_to_geo.json"))
	if err != nil {
		return err
	}
	var qwm map[string]struct {
		CC          string    `json:"cc"`
		City        string    `json:"city"`
		Coordinates []float64 `json:"coordinates"`
	}
	if err := json.Unmarshal(qwf, &qwm); err != nil {
		return err
	}
	// Hosting hubs: each QuakeWorld server counts for the WonderProxy city
	// of its own country nearest its coordinates.
	hub := map[[2]string]int{}
	hubKm := map[[2]string][]float64{}
	for _, v := range qwm {
		if len(v.Coordinates) != 2 {
			continue
		}
		best, bestKm := -1, math.Inf(1)
		for i, c := range cities {
			if c.cc != v.CC {
				continue
			}
			if km := haversineKm(v.Coordinates[0], v.Coordinates[1], c.lat, c.lon); km < bestKm {
				best, bestKm = i, km
			}
		}
		if best >= 0 {
			k := [2]string{cities[best].cc, cities[best].name}
			hub[k]++
			hubKm[k] = append(hubKm[k], bestKm)
		}
	}
	var hubKeys [][2]string
	for k := range hub {
		hubKeys = append(hubKeys, k)
	}
	sort.Slice(hubKeys, func(i, j int) bool {
		if hubKeys[i][0] != hubKeys[j][0] {
			return hubKeys[i][0] < hubKeys[j][0]
		}
		return hubKeys[i][1] < hubKeys[j][1]
	})
	var hw strings.Builder
	hw.WriteString("// hubWeight is how many servers of the QuakeWorld list (vikpe/qw-servers-geoip,\n// its own city coordinates) sit nearest each WonderProxy city of their country:\n// where a country's big hosting networks are. Zero for the other cities.\n// The comment gives the median distance from those servers to the city.\nfunc hubWeight(cc, city string) int {\n\tswitch cc + \"/\" + city {\n")
	for _, k := range hubKeys {
		fmt.Fprintf(&hw, "\tcase %q:\n\t\treturn %d // %.0f km\n", k[0]+"/"+k[1], hub[k], median(hubKm[k]))
	}
	hw.WriteString("\t}\n\treturn 0\n}\n\n")
	w.WriteString(hw.String())
	writeMainCities(model, cities, hub)

	var qwIPs []netip.Addr
	for k := range qwm {
		a, err := netip.ParseAddr(k)
		if err != nil {
			return err
		}
		qwIPs = append(qwIPs, a)
	}
	slices.SortFunc(qwIPs, netip.Addr.Compare)

	lists := []struct {
		name string
		ips  []netip.Addr
	}{{"SCUM 2024-02-05 (unique IPv4)", scumIPs}, {"QuakeWorld (vikpe/qw-servers-geoip)", qwIPs}}
	share := map[string]float64{}
	var nAS, kAS, nAS16, k16 []float64
	var zAS, z16 []float64
	w.WriteString("// Measured concentration of the real server lists, with GeoLite 2019\n// countries and RouteViews 2014 origin ASes:\n//\n")
	for _, l := range lists {
		var ss []population.Site
		for _, a := range l.ips {
			ss = append(ss, population.Site{Addr: a, Country: g.lookup(u32(a)), ASN: t14.lookup(a)})
		}
		st := population.Measure(ss)
		fmt.Fprintf(w, "//\t%s: %s\n", l.name, st)
		for cc, n := range st.PerCountry {
			if cc != "" {
				share[cc] += float64(n) / float64(len(l.ips)) / float64(len(lists))
			}
		}
		for _, c := range st.Countries {
			nAS = append(nAS, float64(c.Sites))
			kAS = append(kAS, float64(len(c.ASSites)))
			if len(c.ASSites) >= 3 {
				zAS = append(zAS, zipfSlope(c.ASSites))
			}
		}
		for _, a := range st.ASes {
			nAS16 = append(nAS16, float64(a.Sites))
			k16 = append(k16, float64(len(a.Slash16Sites)))
			if len(a.Slash16Sites) >= 3 {
				z16 = append(z16, zipfSlope(a.Slash16Sites))
			}
		}
	}
	cAS, bAS := powerFit(nAS, kAS)
	c16, b16 := powerFit(nAS16, k16)
	sAS, s16 := median(zAS), median(z16)
	var mult []float64
	for _, a := range scumIPs {
		mult = append(mult, float64(perIP[a]))
	}
	ports := mean(mult)
	w.WriteString("//\n// Fitted from those lists: hosting ASes per country = cAS*n^bAS (n = the\n// country's addresses), /16s per AS = c16*n^b16 (n = the AS's addresses),\n// the median Zipf exponents of addresses over a country's ASes and over an\n// AS's /16s (log-log rank-frequency slopes), and servers per address\n// (SCUM's game ports per IPv4 address; the QuakeWorld list is keyed by\n// address only).\n")
	fmt.Fprintf(w, "const (\n\tfitASPerCountryC = %.4f\n\tfitASPerCountryB = %.4f\n\tfitSlash16PerASC = %.4f\n\tfitSlash16PerASB = %.4f\n\tfitZipfAS = %.4f\n\tfitZipfSlash16 = %.4f\n\tfitServersPerAddr = %.4f\n)\n\n", cAS, bAS, c16, b16, sAS, s16, ports)

	// Country rank: pooled shares of the two lists, then the remaining
	// countries by routed address space in 2008.
	var ccs []string
	for cc := range known {
		ccs = append(ccs, cc)
	}
	sort.Slice(ccs, func(i, j int) bool {
		a, b := ccs[i], ccs[j]
		if share[a] != share[b] {
			return share[a] > share[b]
		}
		if space[a] != space[b] {
			return space[a] > space[b]
		}
		return a < b
	})
	w.WriteString("// countryRank orders the countries a world may use: first by their pooled\n// share of the SCUM and QuakeWorld lists (each list weighted equally), then\n// the others by routed IPv4 space in the RouteViews table of 2008-05-01.\nfunc countryRank() []string {\n\treturn []string{")
	for i, cc := range ccs {
		if i%12 == 0 {
			w.WriteString("\n\t")
		} else {
			w.WriteString(" ")
		}
		fmt.Fprintf(w, "%q,", cc)
	}
	w.WriteString("\n}\n}\n\n")

	// Fit a Zipf-Mandelbrot law, weight (rank+q)^-s over the first k
	// countries of countryRank, to three numbers: the pooled share of the
	// top country in the real lists, and Table 2's country counts at the
	// paper's world sizes (51 for ET, 70 for CS:S).
	top := share[ccs[0]]
	type fit struct {
		s, q    float64
		k       int
		e       float64
		et, css float64
		top     float64
	}
	best := fit{e: math.Inf(1)}
	for k := 52; k <= len(ccs); k++ {
		for q := 0.0; q <= 20; q += 0.25 {
			for s := 0.5; s <= 5.0; s += 0.02 {
				ws := zipfWeights(s, q, k)
				et, css := expectedDistinct(ws, population.SizeET), expectedDistinct(ws, population.SizeCSS)
				e := (et-51)*(et-51) + (css-70)*(css-70) + 1e4*(ws[0]-top)*(ws[0]-top)
				if e < best.e {
					best = fit{s, q, k, e, et, css, ws[0]}
				}
			}
		}
	}
	log.Printf("country mix: (r+%.2f)^-%.2f over %d countries: top %.3f (real %.3f), ET %.1f, CS:S %.1f countries expected",
		best.q, best.s, best.k, best.top, top, best.et, best.css)
	fmt.Fprintf(w, "// The country mix: weight (rank+fitCountryQ)^-fitCountryZipf over the\n// first fitCountries of countryRank, fitted to the top country's pooled\n// share of the real lists (%.1f%%; fitted %.1f%%) and so that worlds of\n// SizeET and SizeCSS servers hold %.1f and %.1f countries on average\n// (Table 2: 50-52 and 69-71).\nconst (\n\tfitCountryZipf = %.2f\n\tfitCountryQ = %.2f\n\tfitCountries = %d\n)\n",
		100*top, 100*best.top, best.et, best.css, best.s, best.q, best.k)
	return nil
}

// writeMainCities writes mainCityName: for each country, the city of cities
// with the greatest hub weight, the first listed on a tie or when none has
// any.
func writeMainCities(w *strings.Builder, cities []city, hub map[[2]string]int) {
	main, best := map[string]string{}, map[string]int{}
	var ccs []string
	for _, c := range cities {
		n := hub[[2]string{c.cc, c.name}]
		if _, ok := main[c.cc]; !ok {
			ccs = append(ccs, c.cc)
		} else if n <= best[c.cc] {
			continue
		}
		main[c.cc], best[c.cc] = c.name, n
	}
	sort.Strings(ccs)
	w.WriteString("// mainCityName is the city the model stands a country for: the one of its\n// WonderProxy cities nearest which most of the country's servers in the\n// QuakeWorld list sit (vikpe/qw-servers-geoip, its own city coordinates;\n// the lab's population package calls that the hub weight), the first\n// listed on a tie or when none hosts any; \"\" for a country without a\n// city.\nfunc mainCityName(cc string) string {\n\tswitch cc {\n")
	for _, cc := range ccs {
		fmt.Fprintf(w, "\tcase %q:\n\t\treturn %q\n", cc, main[cc])
	}
	w.WriteString("\t}\n\treturn \"\"\n}\n")
}
