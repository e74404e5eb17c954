package landmark

import (
	"math"
	"slices"
	"time"
)

// Siblings (EVALUATION.md, "Siblings"). Two servers behind the same paths
// (the same city and network, different hosts) have landmark vectors
// that differ by the same amount at every landmark, their own delays'
// difference: d_k = s_k(B) - s_k(A) is (nearly) constant in k. The
// client's RTT to B is then its RTT to A plus that amount, so once A has
// answered, B's RTT is predicted without a probe: the Planner skips B
// when the prediction, RTT(A) + min_k d_k, is at or over Threshold +
// Margin. Vectors can also be parallel by chance (two cities whose RTTs
// to every landmark differ by about the same amount), and with few
// landmarks more often: the tolerance on the spread max_k d_k - min_k d_k
// and the margin are the caller's to measure.
//
// A skipped server counts as not probed. A server the adaptive planner
// handed out (with PlanParams.Calibrate, or one no landmark bounds is
// never a sibling: it has no vector) is reported to it as answered with
// the predicted RTT, so its clusters and its stop rule see it.

// Siblings are the constants of sibling skipping.
type Siblings struct {
	// Tolerance (ms, > 0) is the largest spread of two servers' vector
	// differences for them to be taken as siblings.
	Tolerance float64
	// Margin (ms) is added to Threshold: a sibling's prediction must be
	// at least that for the server to be skipped.
	Margin float64
	// MaxDelta (ms), when positive, bounds how much two siblings' own
	// delays may differ: |d_k| <= MaxDelta at every landmark. Servers far
	// apart can have parallel vectors when the landmarks reach both
	// through the same path (from Frankfurt, New York and Tokyo,
	// Wellington is Los Angeles plus 129 ms), while a client near one of
	// them does not (EVALUATION.md, "Siblings").
	MaxDelta float64
	// Near (ms), when positive, turns sibling skipping off for a client
	// whose RTT to its nearest landmark, less its access delay
	// (PlanInput.ClientHeight), is more than Near. Parallel vectors say
	// two servers sit behind the same paths as the landmarks see them; a
	// landmark near the client sees the paths as the client does, and
	// with none near, servers the landmarks reach through one city can
	// be reached from the client through another (from Melbourne, with
	// landmarks in Frankfurt, New York and Tokyo: Los Angeles's servers
	// are San Jose's and Sacramento's siblings; EVALUATION.md,
	// "Siblings").
	Near float64
	// MaxChecked bounds the answered servers compared with a candidate
	// (0: DefaultSiblingsChecked); the candidate is skipped only if every
	// sibling among them predicts it unplayable.
	MaxChecked int
}

// DefaultSiblingsChecked is Siblings.MaxChecked's default.
const DefaultSiblingsChecked = 16

// DefaultSiblings returns the constants scout servers --order landmarks
// uses: a tolerance of 4 ms and a margin of 10 ms, chosen on the
// simulator's tuning seeds 1-10 (the tolerance that saved the most and
// the smallest margin of the grid with which the landmark strategies with
// 8 landmarks found as many playable servers as without siblings);
// siblings within 50 ms of each other (added after the tuning seeds showed
// chance parallels across an ocean; 50 ms from the worlds' server delays,
// whose differences rarely exceed it) and a landmark within 50 ms of the
// client (added after the first held-out seeds, 11-30, showed chance
// parallels for a client with no landmark near; any value from 20 to 140
// ms gives the same on the simulator's four clients). Seeds 31-50 hold
// the final rule out (EVALUATION.md, "Siblings").
func DefaultSiblings() Siblings {
	return Siblings{Tolerance: 4, Margin: 10, MaxDelta: 50, Near: 50}
}

// siblingKey is a vector's bucket: its first two differences from its
// first entry, in units of the tolerance.
type siblingKey [2]int32

// siblingIndex is a Planner's state for Siblings: the vectors as given
// (nil for a server with an entry unmeasured), their buckets, and the
// answered servers of each bucket with their RTTs.
type siblingIndex struct {
	p        Siblings
	vecs     []Vector
	keys     []siblingKey
	answered map[siblingKey][]int32
	rtt      []float64 // ms, of answered slots
	skipped  int
}

func newSiblingIndex(p Siblings) *siblingIndex {
	if p.MaxChecked <= 0 {
		p.MaxChecked = DefaultSiblingsChecked
	}
	return &siblingIndex{p: p, answered: map[siblingKey][]int32{}}
}

// add records the next slot's vector v (as given, before Repair); a
// vector with fewer than two entries or one unmeasured is kept as nil.
func (x *siblingIndex) add(v Vector) {
	var k siblingKey
	if len(v) < 2 || slices.ContainsFunc(v, math.IsNaN) {
		v = nil
	} else {
		for i := range min(2, len(v)-1) {
			k[i] = int32(max(-1e9, min(1e9, math.Floor((v[i+1]-v[0])/x.p.Tolerance))))
		}
	}
	x.vecs = append(x.vecs, v)
	x.keys = append(x.keys, k)
	x.rtt = append(x.rtt, 0)
}

// observed records slot s's answer.
func (x *siblingIndex) observed(s int32, rtt time.Duration) {
	if x.vecs[s] == nil {
		return
	}
	x.rtt[s] = float64(rtt) / float64(time.Millisecond)
	x.answered[x.keys[s]] = append(x.answered[x.keys[s]], s)
}

// predict returns slot s's RTT as its answered siblings predict it (the
// smallest of their predictions), and whether every sibling compared
// (at least one) predicts it at or over limit.
func (x *siblingIndex) predict(s int32, limit float64) (float64, bool) {
	v := x.vecs[s]
	if v == nil {
		return 0, false
	}
	k := x.keys[s]
	pred, found, checked := math.Inf(1), false, 0
	for d0 := int32(-1); d0 <= 1; d0++ {
		for d1 := int32(-1); d1 <= 1; d1++ {
			if len(v) < 3 && d1 != 0 {
				continue
			}
			for _, a := range x.answered[siblingKey{k[0] + d0, k[1] + d1}] {
				if checked >= x.p.MaxChecked {
					break
				}
				checked++
				w := x.vecs[a]
				if len(w) != len(v) { // a ragged input: not comparable
					continue
				}
				lo, hi := math.Inf(1), math.Inf(-1)
				for i := range v {
					d := v[i] - w[i]
					lo, hi = min(lo, d), max(hi, d)
				}
				if hi-lo > x.p.Tolerance || x.p.MaxDelta > 0 && max(-lo, hi) > x.p.MaxDelta {
					continue
				}
				p := x.rtt[a] + lo
				if p < limit {
					return p, false
				}
				pred, found = min(pred, p), true
			}
		}
	}
	return pred, found
}

// nearest returns the smallest entry of the client's vector, +Inf if it
// has none.
func nearest(client Vector) float64 {
	n := math.Inf(1)
	for _, x := range client {
		if !math.IsNaN(x) {
			n = min(n, x)
		}
	}
	return n
}
