package landmark

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// FuzzPlanner feeds NewPlanner the vectors a live client would read from
// masters (any float64, NaN, Inf, negative, ragged lengths) and drives an
// accepted plan to its end: it must never panic, hand out a server twice,
// or fail to stop once every probe is answered.
func FuzzPlanner(f *testing.F) {
	seed := func(xs ...float64) []byte {
		b := make([]byte, 8*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b
	}
	f.Add(uint8(3), uint8(0), seed(10, 50, 90, 20, 40, 80, 100, 5, 60, math.NaN(), math.NaN(), math.NaN()))
	f.Add(uint8(2), uint8(1), seed(-1, 3, math.Inf(1), 0))
	f.Add(uint8(1), uint8(0), seed(math.NaN(), 250, 1e300))
	f.Fuzz(func(t *testing.T, k, drop uint8, data []byte) {
		k = 1 + k%8
		var xs []float64
		for len(data) >= 8 && len(xs) < 8*64 {
			xs = append(xs, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		if len(xs) < int(k) {
			return
		}
		in := PlanInput{Client: Vector(xs[:k]), ClientHeight: math.Abs(xs[0])}
		if math.IsNaN(in.ClientHeight) || math.IsInf(in.ClientHeight, 0) {
			in.ClientHeight = 0
		}
		in.Landmarks = make([][]float64, k)
		for i := range in.Landmarks {
			in.Landmarks[i] = make([]float64, k)
			for j := range in.Landmarks[i] {
				in.Landmarks[i][j] = xs[(i*int(k)+j)%len(xs)]
			}
		}
		rest := xs[k:]
		for i := 0; len(rest) > 0; i++ {
			n := min(len(rest), int(k)-i%2) // ragged: some vectors one short
			in.Targets = append(in.Targets, adaptive.Target{Addr: addrOf(i % 40), Country: "C"})
			in.Vectors = append(in.Vectors, Vector(rest[:n]))
			rest = rest[n:]
		}
		p := PlanParams{Threshold: 200, Margin: 5, Drop: int(drop % 3), Repair: drop%2 == 0, StopAfter: int(drop % 4)}
		if drop%5 < 2 {
			p.Siblings = &Siblings{Tolerance: 1 + float64(drop%7), Margin: float64(drop % 3)}
		}
		if drop%5 == 1 {
			sc := adaptive.Scout()
			p.Calibrate = &sc
		}
		pl, err := NewPlanner(in, p, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for range 4 * (len(in.Targets) + 1) {
			tg, _, ok := pl.Next()
			if !ok {
				break
			}
			if seen[tg.Index] {
				t.Fatalf("server %d handed out twice", tg.Index)
			}
			seen[tg.Index] = true
			if err := pl.Observe(tg.Addr, time.Duration(tg.Index)*time.Millisecond, tg.Index%3 != 0); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := pl.Stopped(); !st {
			t.Fatalf("not stopped after every probe was answered (%d targets, %d probed)", len(in.Targets), len(seen))
		}
	})
}
