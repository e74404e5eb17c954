package discobench

import (
	"testing"
	"time"
)

func TestQuantile_NearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(hundred...), 0.99, 99 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred...), 0, 1 * time.Millisecond},
	} {
		if got := Quantile(tc.in, tc.q); got != tc.want {
			t.Errorf("Quantile(%d values, %v) = %v, want %v", len(tc.in), tc.q, got, tc.want)
		}
	}
}
