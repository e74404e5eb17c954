package master

import "time"

// Pace is when the datagrams of an admitted reply may go. Every budget
// that took the reply (an address's, a network's, the global one) gives
// a line: the datagram that brings the reply's counted bytes to cum may
// go at start + cum×per - tol, the moment that budget's bucket holds the
// bytes before it. The reply's datagram goes at the latest of its lines,
// and never before now: a reply that fits every bucket's burst goes at
// once; a larger one is spread out at the slowest rate that took it, so
// what reaches its destination never exceeds a bucket's burst and rate.
//
// A Pace is a value: it holds no reference and is safe to copy.
type Pace struct {
	now   int64 // Unix nanoseconds
	end   int64 // when the last datagram goes
	lines [levels + 1]paceLine
	n     int
}

// paceLine is one budget's schedule for a reply (see Pace).
type paceLine struct {
	start int64   // the bucket's GCRA time when the reply was taken, or now
	per   float64 // nanoseconds per counted byte
	tol   int64   // the bucket's burst, in nanoseconds
}

// add adds a budget's line; finish then computes the end.
func (p *Pace) add(l paceLine) {
	if p.n < len(p.lines) {
		p.lines[p.n] = l
		p.n++
	}
}

// at returns when the datagram that brings the reply's counted bytes to
// cum may go, in Unix nanoseconds.
func (p *Pace) at(cum int) int64 {
	t := p.now
	for _, l := range p.lines[:p.n] {
		t = max(t, l.start+int64(float64(cum)*l.per)-l.tol)
	}
	return t
}

// finish records the reply's total cost, so that Paced and End know when
// its last datagram goes.
func (p *Pace) finish(cost int) {
	p.end = p.at(cost)
}

// refusePaced is ReasonResponseLimited for a paced reply when atOnce, else
// OK. (A limiter reserving at once never paces; this guards the rule.)
func (p Pace) refusePaced(atOnce bool) Reason {
	if atOnce && p.Paced() {
		return ReasonResponseLimited
	}
	return OK
}

// Paced reports whether some datagram of the reply must wait.
func (p Pace) Paced() bool { return p.end > p.now }

// End returns how long after the reservation the reply's last datagram
// goes (0 when it goes at once).
func (p Pace) End() time.Duration { return time.Duration(p.end - p.now) }

// Delay returns how long after the reservation the datagram that brings
// the reply's counted bytes to cum may go.
func (p Pace) Delay(cum int) time.Duration { return time.Duration(p.at(cum) - p.now) }
