package master

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkSelect answers a full 5,000-server getservers (the issue's
// reference: dpmaster 2.3 spends 0.23-0.31 ms of CPU per such answer).
func BenchmarkSelect(b *testing.B) {
	r := newTestRegistry(b, Config{MaxServersPerAddress: -1})
	for i := range 5000 {
		register(b, r, t0, ap(fmt.Sprintf("198.%d.%d.%d:27960", 51+i/62500, (i/250)%250, i%250+1)))
	}
	dst := make([]netip.AddrPort, 0, 5000)
	if got, _ := r.Select(t0, q71, dst); len(got) != 5000 {
		b.Fatalf("got %d", len(got))
	}
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = r.Select(t0, q71, dst[:0])
	}
}

func BenchmarkChallengeIssueCheck(b *testing.B) {
	c, _ := NewChallenger(DefaultRotationPeriod, &countRand{})
	a := ap("198.51.100.7:27960")
	b.ReportAllocs()
	for b.Loop() {
		x := c.Issue(t0, a)
		if c.Check(t0, a, x.Text) != OK {
			b.Fatal("bad")
		}
	}
}
