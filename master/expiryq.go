package master

// expiryNode says that e leaves the answer snapshot at at (unix ns) at the
// earliest: its silence for Timeout begins no sooner.
type expiryNode struct {
	at int64
	e  *entry
}

// expiryQueue is a binary min-heap of expiryNode by at: the entries of
// the answer snapshot by the time they may fall silent (snapshot.go). A
// verification that moves an entry's silence later leaves its node be;
// the build that pops the node finds it still listed and pushes it again
// at its new time, so a listing of n servers each verified every period
// costs about n pops and pushes per Timeout, none per verification. 16
// bytes per listed server.
//
// It is a heap of its own rather than a container/heap as elsewhere in
// the project: container/heap's Push and Pop pass each node as an any,
// which boxes the 16-byte node on the heap, an allocation per push and
// per pop, about a million of each per Timeout at 1,000,000 listed
// servers.
type expiryQueue []expiryNode

func (q expiryQueue) len() int { return len(q) }

// min is the earliest at, math.MaxInt64 if q is empty.
func (q expiryQueue) min() int64 {
	if len(q) == 0 {
		return 1<<63 - 1
	}
	return q[0].at
}

func (q *expiryQueue) push(at int64, e *entry) {
	*q = append(*q, expiryNode{at, e})
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (q *expiryQueue) pop() expiryNode {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = expiryNode{} // no pointer kept past the end
	*q = h[:last]
	(*q).down(0)
	return top
}

// init orders q as a heap.
func (q expiryQueue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q expiryQueue) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(q) {
			return
		}
		m := l
		if r := l + 1; r < len(q) && q[r].at < q[l].at {
			m = r
		}
		if q[i].at <= q[m].at {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}
