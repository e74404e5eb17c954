package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/landmark"
	"github.com/scout-discovery/scout/latency"
)

// MeshSpec runs a row in the mesh latency mode (population.MeshLatency:
// the city-to-city part of every RTT is a measured mesh) and adds the
// landmark strategies to the row's variants.
type MeshSpec struct {
	Latency   population.MeshLatency
	Landmarks []LandmarkSet
}

// LandmarkSet is one landmark strategy: K masters in K cities, each having
// measured every server it lists, and the planner's constants.
type LandmarkSet struct {
	Name   string // the variant's name in the row, e.g. "landmarks-3"
	Cities []latency.City
	Params landmark.PlanParams
	// Unmeasured is the share of servers no landmark has measured yet
	// (drawn per server from the seed), left to Armitage's planner.
	Unmeasured float64
	// KnowAccess gives the planner the client's access delay as its height
	// (landmark.PlanInput.ClientHeight), as a client that measured its
	// first hop would know it.
	KnowAccess bool
	// Derive makes the client work as the live one does: the landmarks'
	// matrix (for Repair) is landmark.MatrixFromVectors of the servers'
	// vectors instead of the mesh's, and the client's height is
	// landmark.AccessHeight of its vector and that matrix instead of its
	// true access delay (KnowAccess is then ignored); Repair then leaves
	// the client's own vector as measured (PlanInput.LandmarksDerived).
	Derive bool
}

// MeasureSamples is how many probes a landmark's RTT to a server (and a
// client's to a landmark) is the median of: a master keeps the median of
// its last few verification and re-probe RTTs.
const MeasureSamples = 3

// LandmarkAccess is a master's access delay: none, as WonderProxy's nodes
// (datacentres) measured the mesh.
const LandmarkAccess = 0

// landmarkVectors returns what a client at place knows under ls: every
// server's vector, its own vector and the landmarks' matrix, in ms, each
// measurement the median of MeasureSamples probes with the model's jitter.
func landmarkVectors(w *population.World, ml population.MeshLatency, place population.Place, ls LandmarkSet, seed uint64) (vs []landmark.Vector, client landmark.Vector, lm [][]float64) {
	vs, client, lm = LandmarkVectors(w, ml, place, ls.Cities, seed)
	for i := range vs {
		if unmeasured(seed, i, ls.Unmeasured) {
			for j := range vs[i] {
				vs[i][j] = math.NaN()
			}
		}
	}
	return vs, client, lm
}

// LandmarkVectors returns what a client at place knows from landmark
// masters in cities: every server's vector, its own vector and the
// landmarks' matrix, in ms, each measurement the median of MeasureSamples
// probes with the model's jitter (drawn from seed: the same for every
// place).
func LandmarkVectors(w *population.World, ml population.MeshLatency, place population.Place, cities []latency.City, seed uint64) (vs []landmark.Vector, client landmark.Vector, lm [][]float64) {
	k := len(cities)
	vs = make([]landmark.Vector, len(w.Servers))
	for i := range vs {
		vs[i] = make(landmark.Vector, k)
	}
	rng := rand.New(rand.NewPCG(seed, 0x1a4d))
	measure := func(base time.Duration) float64 {
		var xs [MeasureSamples]time.Duration
		for j := range xs {
			xs[j] = base + population.Jitter(rng, base)
		}
		slices.Sort(xs[:])
		return float64(xs[MeasureSamples/2]) / float64(time.Millisecond)
	}
	cityRTT := func(a, b latency.City) time.Duration {
		d, _ := ml.CityRTT(a, b)
		return d
	}
	client = make(landmark.Vector, k)
	lm = make([][]float64, k)
	for j, c := range cities {
		lp := population.Place{Name: "landmark/" + c.Country + "/" + c.Name, City: c, Access: LandmarkAccess}
		rtts, _ := w.MeshRTTs(ml, lp)
		for i, d := range rtts {
			vs[i][j] = measure(d)
		}
		client[j] = measure(place.Access + cityRTT(place.City, c))
		lm[j] = make([]float64, k)
		for o, d := range cities {
			lm[j][o] = float64(cityRTT(c, d)) / float64(time.Millisecond)
		}
	}
	return vs, client, lm
}

// Silent reports whether server i never answers in a run of this seed
// (Input.Seed) and loss (Pacing.Loss).
func Silent(seed uint64, i int, loss float64) bool { return silent(seed, i, loss) }

func unmeasured(seed uint64, i int, share float64) bool {
	return share > 0 && silent(seed^0x6c616e64, i, share)
}

// runLandmarks runs each landmark set of ms for one row.
func runLandmarks(w *population.World, ms *MeshSpec, place population.Place, targets []adaptive.Target, in Input, full time.Duration, seed uint64, first int) ([]Outcome, error) {
	var out []Outcome
	for i, ls := range ms.Landmarks {
		vs, client, lm := landmarkVectors(w, ms.Latency, place, ls, seed)
		pi := landmark.PlanInput{Targets: targets, Vectors: vs, Client: client, Landmarks: lm}
		switch {
		case ls.Derive:
			pi.Landmarks, pi.LandmarksDerived = landmark.MatrixFromVectors(vs, len(client)), true
			pi.ClientHeight = landmark.AccessHeight(client, pi.Landmarks)
		case ls.KnowAccess:
			pi.ClientHeight = float64(place.Access) / float64(time.Millisecond)
		}
		pl, err := landmark.NewPlanner(pi,
			ls.Params, rand.New(rand.NewPCG(seed, uint64(first+i)+1)))
		if err != nil {
			return nil, fmt.Errorf("sim: landmarks %s: %w", ls.Name, err)
		}
		r, err := Run(pl, in)
		if err != nil {
			return nil, err
		}
		o := outcome(ls.Name, r, full)
		o.Initial = r.Calibrate + r.Split
		o.Missed, o.Wasted = byRegion(w, r, in)
		out = append(out, o)
	}
	return out, nil
}

// byRegion counts, by the server's region, the playable servers r did not
// find by its stop and the unplayable servers it probed.
func byRegion(w *population.World, r *Result, in Input) (missed, wasted map[string]int) {
	missed, wasted = map[string]int{}, map[string]int{}
	found := make([]bool, len(in.Targets))
	end := r.End
	if r.Stopped {
		end = r.StopTime
	}
	for _, p := range r.Trace {
		if in.RTTs[p.Index] >= in.Playable {
			wasted[latency.Region(w.Servers[p.Index].Country)]++
		}
		if p.Answered && p.Done <= end {
			found[p.Index] = true
		}
	}
	for i, d := range in.RTTs {
		if d < in.Playable && !silent(in.Seed, i, in.Pacing.Loss) && !found[i] {
			missed[latency.Region(w.Servers[i].Country)]++
		}
	}
	return missed, wasted
}
