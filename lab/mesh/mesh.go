// Package mesh reads real all-pairs round-trip-time measurements, the
// ground truth that landmark estimates are judged against:
//
//   - WonderProxy's city-to-city pings of 19-20 July 2020 (246 cities,
//     62,104 ordered pairs; `ping -c 30` summaries averaged per pair), and
//   - RIPE Atlas's country-to-country ping statistics (5 days of 2025).
//
// The files stay in the shared data folder (../shared/data beside the
// repository; their terms and attribution are in NOTICE): no RTT pair is
// copied into the repository. The package is a reader only: files in,
// matrices out, no network and no clock.
package mesh

import (
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/latency"
)

// File names in the data folder.
const (
	WonderProxyPings  = "wonderproxy_pings-2020-07-19-2020-07-20-grouped.csv.gz"
	WonderProxyCities = "wonderproxy_servers-2020-07-19_iso2.csv"
	RIPECountries     = "ripe_atlas_country_rtt_stat.csv.gz"
)

// MaxRTT bounds an RTT read, in ms: a larger one is a damaged row.
const MaxRTT = 60_000

// MaxNodes bounds the nodes a matrix may have, so a damaged file cannot
// make Load allocate an n*n matrix of any size.
const MaxNodes = 4096

// City is one WonderProxy node.
type City struct {
	ID       int    // WonderProxy's node id
	Name     string // e.g. "Melbourne"
	Country  string // ISO 3166 alpha-2, e.g. "AU"
	Lat, Lon float64
}

// Matrix is a symmetric RTT matrix in milliseconds between n nodes; NaN
// where nothing was measured.
type Matrix struct {
	n   int
	rtt []float64
}

// NewMatrix returns an n-node matrix with nothing measured.
func NewMatrix(n int) *Matrix {
	m := &Matrix{n: n, rtt: make([]float64, n*n)}
	for i := range m.rtt {
		m.rtt[i] = math.NaN()
	}
	for i := range n {
		m.rtt[i*n+i] = 0
	}
	return m
}

// Len returns the number of nodes.
func (m *Matrix) Len() int { return m.n }

// RTT returns the RTT between nodes i and j in ms, NaN if unmeasured.
func (m *Matrix) RTT(i, j int) float64 { return m.rtt[i*m.n+j] }

// Set records the RTT between i and j, both ways.
func (m *Matrix) Set(i, j int, ms float64) {
	m.rtt[i*m.n+j] = ms
	m.rtt[j*m.n+i] = ms
}

// Mesh is WonderProxy's city mesh.
type Mesh struct {
	Cities []City
	*Matrix
}

// Index returns the index of the city named name, or -1.
func (m *Mesh) Index(name string) int {
	return slices.IndexFunc(m.Cities, func(c City) bool { return strings.EqualFold(c.Name, name) })
}

// LoadWonderProxy reads the WonderProxy cities and pings from dir. The RTT
// of a pair is the mean of its two directions' average RTT where both were
// measured, else the one that was. Self-pairs and pairs naming unknown
// cities are ignored; a malformed row is an error naming its line.
func LoadWonderProxy(dir string) (*Mesh, error) {
	rows, err := readCSV(filepath.Join(dir, WonderProxyCities))
	if err != nil {
		return nil, err
	}
	col, err := columns(rows, WonderProxyCities, "id", "name", "iso2", "latitude", "longitude")
	if err != nil {
		return nil, err
	}
	mesh := &Mesh{}
	byID := map[int]int{}
	for k, r := range rows[1:] {
		id, err1 := strconv.Atoi(r[col["id"]])
		lat, err2 := strconv.ParseFloat(r[col["latitude"]], 64)
		lon, err3 := strconv.ParseFloat(r[col["longitude"]], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("mesh: %s line %d: %v", WonderProxyCities, k+2, err)
		}
		if _, dup := byID[id]; dup {
			return nil, fmt.Errorf("mesh: %s line %d: id %d twice", WonderProxyCities, k+2, id)
		}
		byID[id] = len(mesh.Cities)
		mesh.Cities = append(mesh.Cities, City{ID: id, Name: r[col["name"]], Country: r[col["iso2"]], Lat: lat, Lon: lon})
	}
	if len(mesh.Cities) > MaxNodes {
		return nil, fmt.Errorf("mesh: %s: %d cities, more than %d", WonderProxyCities, len(mesh.Cities), MaxNodes)
	}
	n := len(mesh.Cities)
	sum, cnt := make([]float64, n*n), make([]uint8, n*n)
	rows, err = readCSV(filepath.Join(dir, WonderProxyPings))
	if err != nil {
		return nil, err
	}
	col, err = columns(rows, WonderProxyPings, "source", "destination", "avg")
	if err != nil {
		return nil, err
	}
	for k, r := range rows[1:] {
		s, err1 := strconv.Atoi(r[col["source"]])
		d, err2 := strconv.Atoi(r[col["destination"]])
		avg, err3 := strconv.ParseFloat(r[col["avg"]], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("mesh: %s line %d: %v", WonderProxyPings, k+2, err)
		}
		if !(avg >= 0 && avg <= MaxRTT) {
			return nil, fmt.Errorf("mesh: %s line %d: RTT %v", WonderProxyPings, k+2, avg)
		}
		i, ok1 := byID[s]
		j, ok2 := byID[d]
		if !ok1 || !ok2 || i == j {
			continue
		}
		sum[i*n+j] += avg
		cnt[i*n+j]++
	}
	mesh.Matrix = NewMatrix(n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			a, b := sum[i*n+j], sum[j*n+i]
			switch ca, cb := cnt[i*n+j], cnt[j*n+i]; {
			case ca > 0 && cb > 0:
				mesh.Set(i, j, (a/float64(ca)+b/float64(cb))/2)
			case ca > 0:
				mesh.Set(i, j, a/float64(ca))
			case cb > 0:
				mesh.Set(i, j, b/float64(cb))
			}
		}
	}
	return mesh, nil
}

// Countries is RIPE Atlas's country-to-country matrix of mean RTTs.
type Countries struct {
	Codes []string // ISO 3166 alpha-2, sorted
	*Matrix
}

// Index returns the index of country code cc, or -1.
func (c *Countries) Index(cc string) int { return slices.Index(c.Codes, cc) }

// LoadRIPE reads RIPE Atlas's country matrix from dir (rtt_avg per pair;
// the pseudo-countries "None" and "Unknown" and intra-country rows are
// left out).
func LoadRIPE(dir string) (*Countries, error) {
	rows, err := readCSV(filepath.Join(dir, RIPECountries))
	if err != nil {
		return nil, err
	}
	col, err := columns(rows, RIPECountries, "cty1", "cty2", "rtt_avg")
	if err != nil {
		return nil, err
	}
	type pair struct {
		a, b string
		ms   float64
	}
	var pairs []pair
	idx := map[string]int{}
	for k, r := range rows[1:] {
		a, b := r[col["cty1"]], r[col["cty2"]]
		if len(a) != 2 || len(b) != 2 || a == b {
			continue
		}
		ms, err := strconv.ParseFloat(r[col["rtt_avg"]], 64)
		if err != nil || !(ms >= 0 && ms <= MaxRTT) {
			return nil, fmt.Errorf("mesh: %s line %d: rtt_avg %q", RIPECountries, k+2, r[col["rtt_avg"]])
		}
		pairs = append(pairs, pair{a, b, ms})
		idx[a], idx[b] = 0, 0
	}
	if len(idx) > MaxNodes {
		return nil, fmt.Errorf("mesh: %s: %d countries, more than %d", RIPECountries, len(idx), MaxNodes)
	}
	c := &Countries{}
	for cc := range idx {
		c.Codes = append(c.Codes, cc)
	}
	slices.Sort(c.Codes)
	for i, cc := range c.Codes {
		idx[cc] = i
	}
	c.Matrix = NewMatrix(len(c.Codes))
	for _, p := range pairs {
		c.Set(idx[p.a], idx[p.b], p.ms)
	}
	return c, nil
}

// readCSV reads a CSV file, gunzipping names ending in .gz.
func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mesh: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("mesh: %s: %w", path, err)
		}
		defer z.Close()
		r = z
	}
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("mesh: %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("mesh: %s: empty", path)
	}
	return rows, nil
}

// columns maps the header's names to their indexes, requiring want.
func columns(rows [][]string, file string, want ...string) (map[string]int, error) {
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, fmt.Errorf("mesh: %s: no column %q", file, w)
		}
	}
	return col, nil
}

// ByCity returns m's RTT (ms) between two cities named by their country
// and name, ok false where either is not one of m's cities or the pair
// was not measured: the shape population.CityMesh takes.
func (m *Mesh) ByCity() func(a, b latency.City) (float64, bool) {
	idx := make(map[[2]string]int, len(m.Cities))
	for i, c := range m.Cities {
		idx[[2]string{c.Country, c.Name}] = i
	}
	return func(a, b latency.City) (float64, bool) {
		i, ok1 := idx[[2]string{a.Country, a.Name}]
		j, ok2 := idx[[2]string{b.Country, b.Name}]
		if !ok1 || !ok2 {
			return 0, false
		}
		r := m.RTT(i, j)
		return r, !math.IsNaN(r)
	}
}

// Directions are WonderProxy's per-direction summaries: for each ordered
// pair (source i pings destination j), the two days' hourly `ping -c 30`
// summaries as the file gives them (one value per pair, NaN where not
// measured). Pinging i from j and j from i measures the same two one-way
// paths, from different nodes at other minutes: how far their least RTTs
// are apart says how well a path's least RTT repeats.
type Directions struct {
	Cities        []City
	Min, Avg, Max []float64 // n*n, [i*n+j]
}

// LoadWonderProxyDirections reads the cities and the per-direction min,
// avg and max RTTs (ms) from dir; a pair given twice keeps the mean.
func LoadWonderProxyDirections(dir string) (*Directions, error) {
	m, err := LoadWonderProxy(dir) // the cities, and the file's checks
	if err != nil {
		return nil, err
	}
	n := len(m.Cities)
	byID := make(map[int]int, n)
	for i, c := range m.Cities {
		byID[c.ID] = i
	}
	rows, err := readCSV(filepath.Join(dir, WonderProxyPings))
	if err != nil {
		return nil, err
	}
	col, err := columns(rows, WonderProxyPings, "source", "destination", "min", "avg", "max")
	if err != nil {
		return nil, err
	}
	d := &Directions{Cities: m.Cities}
	sums := [3][]float64{make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)}
	cnt := make([]float64, n*n)
	for k, r := range rows[1:] {
		s, err1 := strconv.Atoi(r[col["source"]])
		t, err2 := strconv.Atoi(r[col["destination"]])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("mesh: %s line %d: %v", WonderProxyPings, k+2, err)
		}
		i, ok1 := byID[s]
		j, ok2 := byID[t]
		if !ok1 || !ok2 || i == j {
			continue
		}
		for f, name := range []string{"min", "avg", "max"} {
			x, err := strconv.ParseFloat(r[col[name]], 64)
			if err != nil || !(x >= 0 && x <= MaxRTT) {
				return nil, fmt.Errorf("mesh: %s line %d: %s %q", WonderProxyPings, k+2, name, r[col[name]])
			}
			sums[f][i*n+j] += x
		}
		cnt[i*n+j]++
	}
	out := [3]*[]float64{&d.Min, &d.Avg, &d.Max}
	for f := range sums {
		for k := range sums[f] {
			if cnt[k] == 0 {
				sums[f][k] = math.NaN()
			} else {
				sums[f][k] /= cnt[k]
			}
		}
		*out[f] = sums[f]
	}
	return d, nil
}
