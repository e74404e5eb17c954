package landmark

import (
	"math"
	"slices"
)

// What a live client can derive from what the masters already publish,
// without a packet more: the landmarks' RTTs to each other, for Repair,
// and its own access delay, for PlanInput.ClientHeight.

// MatrixFromVectors returns a K x K matrix of upper bounds on the
// landmarks' RTTs to each other, from the servers' vectors alone:
// entry (j, k) is the smallest v_j + v_k over the servers both landmarks
// measured, the RTT of a path from L_j to L_k through that server (each
// leg measured), and 0 on the diagonal; NaN where no server was measured
// by both. With many servers, some sit near each landmark (the hosting
// hubs the landmarks are placed in), so the bound is the direct RTT plus
// the near server's own delays; where the direct route is a detour it may
// be below the direct RTT, which is what Repair is for; it may also be
// below it through a server on a better route than the landmarks' own
// (from Tokyo, a server whose RTTs to Frankfurt and Tokyo add up to less
// than theirs), and Repair then clips more than the measured matrix would:
// in the simulator it costs Tokyo probes and no client a playable server
// (EVALUATION.md, "Landmarks", scout-lab sim --derive). k is the number of
// landmarks; entries of vectors beyond k are ignored.
func MatrixFromVectors(vs []Vector, k int) [][]float64 {
	lm := make([][]float64, k)
	for j := range lm {
		lm[j] = make([]float64, k)
		for o := range lm[j] {
			if o != j {
				lm[j][o] = math.Inf(1)
			}
		}
	}
	for _, v := range vs {
		n := min(len(v), k)
		for j := range n {
			if math.IsNaN(v[j]) {
				continue
			}
			for o := j + 1; o < n; o++ {
				if x := v[j] + v[o]; x < lm[j][o] { // NaN compares false
					lm[j][o], lm[o][j] = x, x
				}
			}
		}
	}
	for j := range lm {
		for o := range lm[j] {
			if math.IsInf(lm[j][o], 1) {
				lm[j][o] = math.NaN()
			}
		}
	}
	return lm
}

// MinEmbedLandmarks is the fewest landmarks AccessHeight embeds: in 2
// dimensions with heights, K landmarks have 3K-3 free coordinates (less a
// translation and a rotation) and K(K-1)/2 RTTs between them, so the fit
// is determined only from K = 6. With fewer the fit's heights are
// arbitrary, and far from the client so are the pairs' estimates, so
// the estimate is 0 (no height) rather than a guess that would raise
// every lower bound by twice it.
const MinEmbedLandmarks = 6

// AccessHeight estimates a client's access delay (its height: the part of
// every path it shares with none of them) from its vector and the
// landmarks' matrix, as the smaller of two estimates, each of which may
// overstate it:
//
//   - the pairs: half the smallest c_j + c_k - d(L_j, L_k), which in the
//     height model (d = |x_a - x_b| + h_a + h_b) is the height plus half
//     the client's detour off the line between the two landmarks: tight
//     when a landmark is near the client, far too high when none is
//     (Melbourne with Frankfurt, New York and Tokyo: 113 ms for 20);
//   - the embedding: the height of the client placed by Space.Place in
//     the GNP space (2 dimensions and heights) fitted to lm; 0 when fewer
//     than MinEmbedLandmarks landmarks have both the client's RTT and
//     their RTTs to each other, or the space cannot be fitted or place
//     the client.
//
// On WonderProxy's mesh with the hub landmarks and a client in Melbourne
// with 20 ms of access, the pairs say 113.4 ms and the embedding 0 with
// 3 landmarks, 20.3 and 16.8 with 8 (go test -run AccessHeight_RealMesh
// -v ./lab/evaluate; EVALUATION.md, "Landmarks"). The
// result is at most the smallest c_k and at least 0.
func AccessHeight(client Vector, lm [][]float64) float64 {
	h, cmin := math.Inf(1), math.Inf(1)
	for j, cj := range client {
		if math.IsNaN(cj) {
			continue
		}
		cmin = min(cmin, cj)
		for k := j + 1; k < len(client); k++ {
			ck := client[k]
			if math.IsNaN(ck) || j >= len(lm) || k >= len(lm[j]) || math.IsNaN(lm[j][k]) {
				continue
			}
			h = min(h, (cj+ck-lm[j][k])/2)
		}
	}
	if math.IsInf(h, 1) || !(h > 0) {
		return 0
	}
	var n int
	for k, c := range client {
		if !math.IsNaN(c) && k < len(lm) && slices.ContainsFunc(lm[k], func(x float64) bool { return !math.IsNaN(x) && x > 0 }) {
			n++
		}
	}
	if n < MinEmbedLandmarks {
		return 0
	}
	sp, err := FitSpace(lm, 2)
	if err != nil {
		return 0
	}
	c, err := sp.Place(client)
	if err != nil {
		return 0
	}
	return max(0, min(h, cmin, c.H))
}
