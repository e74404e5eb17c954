package adaptive

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkPlan50k plans and runs a 50,000-server world to the end (auto-stop
// off), one probe in flight: clustering, calibration, step 5 and every step-6
// hand-out and outcome. ns/target is the cost per server.
func BenchmarkPlan50k(b *testing.B) {
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"paper", func(*Params) {}},
		{"rerank+estimate", func(p *Params) { p.Rerank, p.Stop = true, StopEstimate }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := randomWorld(rand.New(rand.NewPCG(1, 1)), 50000)
			p := Paper()
			tc.edit(&p)
			p.StopRTT = 0
			b.ReportAllocs()
			n := 0
			for i := range b.N {
				pl, err := New(w.targets, p, rand.New(rand.NewPCG(uint64(i), 0)))
				if err != nil {
					b.Fatal(err)
				}
				for {
					t, _, ok := pl.Next()
					if !ok {
						break
					}
					r, ans := w.truth(t)
					pl.Observe(t.Addr, r, ans)
				}
				n = pl.Stats().Targets
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/target")
		})
	}
}
