package probe

import (
	"math"
	"time"
)

// The arrival calendar (see Pacer, "Replies planned"): the replies the
// run expects at the access link, by the millisecond they are due, so
// that a probe whose server's RTT is known goes out only when its reply
// would find the link with room.

// Constants of the calendar.
const (
	// calBin is the width of one bin of the calendar.
	calBin = time.Millisecond
	// calBins is how many bins it holds ahead: replies due further out
	// than calBins*calBin after the send are not counted.
	calBins = 1024
	// calHistBins bounds the RTT histogram (calBin each); a longer RTT
	// counts in the last bin.
	calHistBins = calBins
	// calMinRTTs is how many RTTs the histogram must hold before a send
	// to a server whose RTT is unknown is spread by it; sends made before
	// wait in a buffer (at most calPendingMax, then the oldest go
	// unspread: their replies are in by then).
	calMinRTTs    = 50
	calPendingMax = 4096
	// calMinRoom: a bin takes one more reply while the replies it expects
	// are at least this far under its share (the spread of servers of
	// unknown RTT puts fractions of a reply in every bin).
	calMinRoom = 0.5
)

// calendar counts the replies due at the link per calBin, from the
// sends made: a send to a server of known RTT counts one reply at its
// send time plus that RTT; a send to a server of unknown RTT counts the
// run's RTT distribution from its send time on (the expected arrivals of
// a server drawn at random: the spread is never taken back, since a
// server answered early was as likely as the distribution said). It is
// part of the pure core: every call takes the time.
type calendar struct {
	bins  [calBins]float64 // replies due, by absolute bin index mod calBins
	base  int64            // the absolute bin index of the oldest bin kept
	hist  [calHistBins]int // answered RTTs by calBin
	nHist int
	// spread is hist normalised, recomputed at most every calBins/8
	// answers (it changes little once calMinRTTs are in).
	spread      []float64
	spreadFirst int // the first bin of hist with a count
	spreadAt    int // nHist when spread was computed
	pending     []time.Time
}

func binOf(t time.Time) int64 { return t.UnixNano() / int64(calBin) }

// advance drops the bins before now.
func (c *calendar) advance(now time.Time) {
	b := binOf(now)
	if c.base == 0 {
		c.base = b
		return
	}
	if b <= c.base {
		return
	}
	if b-c.base >= calBins {
		clear(c.bins[:])
	} else {
		for i := c.base; i < b; i++ {
			c.bins[i%calBins] = 0
		}
	}
	c.base = b
}

// add counts n replies due at t, if t is within the calendar.
func (c *calendar) add(t time.Time, n float64) {
	b := binOf(t)
	if b < c.base || b >= c.base+calBins {
		return
	}
	c.bins[b%calBins] += n
}

// load returns the replies due in the bin of t.
func (c *calendar) load(t time.Time) float64 {
	b := binOf(t)
	if b < c.base || b >= c.base+calBins {
		return 0
	}
	return c.bins[b%calBins]
}

// rtt records an answered RTT in the histogram.
func (c *calendar) rtt(r time.Duration) {
	c.hist[min(int(r/calBin), calHistBins-1)]++
	c.nHist++
}

// known counts the reply of a send at now to a server of RTT rtt.
func (c *calendar) known(now time.Time, rtt time.Duration) {
	c.advance(now)
	c.add(now.Add(rtt), 1)
}

// unknown counts the reply of a send at now to a server of unknown RTT,
// spread by the RTT histogram (or buffered until it holds calMinRTTs).
func (c *calendar) unknown(now time.Time) {
	c.advance(now)
	if c.nHist < calMinRTTs {
		if len(c.pending) == calPendingMax {
			c.pending = c.pending[1:]
		}
		c.pending = append(c.pending, now)
		return
	}
	if c.spread == nil || c.nHist-c.spreadAt >= calBins/8 {
		c.resample()
	}
	for _, at := range c.pending {
		c.spreadFrom(at)
	}
	c.pending = c.pending[:0]
	c.spreadFrom(now)
}

func (c *calendar) resample() {
	if c.spread == nil {
		c.spread = make([]float64, calHistBins)
	}
	c.spreadFirst = calHistBins
	for i, n := range c.hist {
		c.spread[i] = float64(n) / float64(c.nHist)
		if n > 0 && i < c.spreadFirst {
			c.spreadFirst = i
		}
	}
	c.spreadAt = c.nHist
}

// spreadFrom adds the RTT distribution from a send at at.
func (c *calendar) spreadFrom(at time.Time) {
	b0 := binOf(at)
	for i := c.spreadFirst; i < calHistBins; i++ {
		if w := c.spread[i]; w > 0 {
			b := b0 + int64(i)
			if b >= c.base && b < c.base+calBins {
				c.bins[b%calBins] += w
			}
		}
	}
}

// Planned records a send at now to a server whose RTT is rtt, 0 when
// unknown, in the calendar of replies due.
func (p *Pacer) Planned(now time.Time, rtt time.Duration) {
	if rtt > 0 {
		p.cal.known(now, rtt)
	} else {
		p.cal.unknown(now)
	}
}

// Room reports whether one more reply may be due at at: whether the
// replies the calendar expects in at's bin leave room for it at the
// current rate, c replies a bin. Bins hold whole replies: bin b holds
// floor(c + u_b), u_b = frac(b x golden ratio) spread evenly over [0, 1),
// so the bins hold c on average; a bin's share does not move when the
// rate changes a little (a dithering by the bin's index alone would).
// True while the capacity is unknown.
func (p *Pacer) Room(at time.Time) bool {
	room, _ := p.room(at)
	return room >= calMinRoom
}

// room returns how many more replies may be due in at's bin and how
// many it holds (see Room); +Inf and 0 while the capacity is unknown.
func (p *Pacer) room(at time.Time) (room, share float64) {
	if p.capacityRate() <= 0 || p.rate <= 0 {
		return math.Inf(1), 0
	}
	c := p.rate * calBin.Seconds()
	_, u := math.Modf(float64(uint64(binOf(at))%(1<<20)) * math.Phi)
	share = math.Floor(c + u)
	return share - p.cal.load(at), share
}
