package probe

import (
	"math"
	"slices"
	"time"
)

// Received records a datagram of size bytes on the wire (payload and
// UDPOverhead) that arrived at at: the kernel's receive time when there
// is one. sent is when the probe it answers was sent, zero when it
// answers none. Arrivals are expected in the order they came.
func (p *Pacer) Received(at time.Time, size int, sent time.Time) {
	if size <= 0 {
		return
	}
	p.received++
	for i := range p.trains {
		if t := &p.trains[i]; t.n > 0 && !t.final {
			t.seen++
		}
	}
	if p.meanSize == 0 {
		p.meanSize = float64(size)
	} else {
		p.meanSize += paceSizeWeight * (float64(size) - p.meanSize)
	}
	if len(p.windowed) < paceMaxWindowed {
		p.windowed = append(p.windowed, at)
	}
	prevAt, prevSent := p.prevAt, p.prevSent
	p.prevAt, p.prevSent = at, sent
	if !p.havePrev {
		p.havePrev = true
		return
	}
	gap := at.Sub(prevAt)
	if gap < 0 {
		gap = 0
	}
	// An echo: the two replies are as far apart as their probes were, so
	// nothing queued one behind the other (two servers at the same
	// distance answering probes paced at this gap). Evenly spaced echoes
	// would look like a busy link.
	echo := false
	if !sent.IsZero() && !prevSent.IsZero() {
		d := gap - sent.Sub(prevSent)
		echo = d.Abs() <= max(paceEchoSlack, gap/paceEchoShare)
	}
	if echo {
		p.trainN, p.trainB, p.trainS = 0, 0, 0
		p.run = 0
		return
	}
	if at.Equal(p.trainAt) {
		// A train's reply: the trains measure the path on their own
		// (Train); left out here, the capacity is learnt only where
		// the replies of different servers queue on the downstream
		// link, which a slow upstream never makes them do (see Pacer,
		// "Utilisation").
		p.trainN, p.trainB, p.trainS = 0, 0, 0
	} else {
		p.train(gap, size)
	}
	if p.capacity > 0 {
		busy := time.Duration((1+paceBusyTol)*float64(size)/p.capacity*float64(time.Second)) + paceBusySlack
		if gap <= busy {
			p.run += gap
		} else {
			p.run = 0
		}
		if p.run > time.Duration(paceStandingPackets*p.meanSize/p.capacity*float64(time.Second)) {
			p.congested(at)
			p.run = 0
		}
	}
}

// train adds one gap to the current train of evenly spaced arrivals and
// takes a capacity sample when it is long enough.
func (p *Pacer) train(gap time.Duration, size int) {
	g, b := gap.Seconds(), float64(size)
	if p.trainN > 0 {
		mean := p.trainS / p.trainB // seconds per byte
		if math.Abs(g/b-mean) > paceTrainTol*mean {
			p.trainN, p.trainB, p.trainS = 0, 0, 0
		}
	}
	p.trainN++
	p.trainB += b
	p.trainS += g
	if p.trainN < paceTrainLen {
		return
	}
	if p.trainS > 0 {
		if len(p.samples) == paceSamples {
			p.samples = p.samples[1:]
		}
		p.samples = append(p.samples, p.trainB/p.trainS)
		s := slices.Clone(p.samples)
		slices.Sort(s)
		m := s[len(s)/2]
		agree := 0
		for _, x := range s {
			if math.Abs(x-m) <= paceAgreeTol*m {
				agree++
			}
		}
		if agree >= min(paceAgree, max(paceAgreeFirst, len(s)/2+1)) {
			p.capacity = m
		}
	}
	p.trainN, p.trainB, p.trainS = 0, 0, 0
}
