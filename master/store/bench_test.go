package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
)

// BenchmarkApply commits n realistic servers in one Apply (one
// transaction, one set of fsyncs) to a fresh file, as the master's
// group commit does after a burst of registrations. servers/s is what
// the disk takes per second at that batch size.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{1, 100, 1000, 16384} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			puts := make([]master.Server, n)
			for i := range puts {
				puts[i] = realistic(i)
			}
			st, err := Open(filepath.Join(b.TempDir(), "master.db"), Options{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			b.ResetTimer()
			for b.Loop() {
				if err := st.Apply(puts, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "servers/s")
		})
	}
}

// BenchmarkOpenLoad is a master's start from its state file: Open (with
// its consistency check) then Load of n servers.
func BenchmarkOpenLoad(b *testing.B) {
	for _, n := range []int{16384, 131072} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "master.db")
			st, err := Open(path, Options{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			const chunk = 16384
			for c := 0; c < n; c += chunk {
				puts := make([]master.Server, 0, chunk)
				for i := c; i < c+chunk && i < n; i++ {
					puts = append(puts, realistic(i))
				}
				if err := st.Apply(puts, nil); err != nil {
					b.Fatal(err)
				}
			}
			st.Close()
			var open, load time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				st, err := Open(path, Options{Timeout: time.Second, RefuseDamaged: true})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				got, _, err := st.Load()
				if err != nil || len(got) != n {
					b.Fatalf("Load = %d, %v", len(got), err)
				}
				load += time.Since(t1)
				open += t1.Sub(t0)
				st.Close()
			}
			b.ReportMetric(open.Seconds()/float64(b.N)*1e3, "open-ms")
			b.ReportMetric(load.Seconds()/float64(b.N)*1e3, "load-ms")
		})
	}
}
