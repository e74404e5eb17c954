package masterd

import (
	"container/heap"
	"time"

	"github.com/scout-discovery/scout/master"
)

// Paced replies (master.Pace): a reply larger than a budget's burst comes
// from the handler with a delay on each datagram, and the socket's sender
// goroutine sends each datagram when its delay is up, interleaving the
// paced replies of many destinations, while it goes on sending the other
// long replies at once.
const (
	// MaxPacedDatagrams bounds the datagrams waiting in a socket's paced
	// replies (about 80 bytes each, the payloads being the answer cache's:
	// 21 MB); a paced reply that would pass it is dropped and counted
	// (send_errors_total{error="queue_full"}).
	MaxPacedDatagrams = 1 << 18
)

// timedReply is a reply for the sender goroutine: its datagrams, and the
// time their delays count from (the handler's now).
type timedReply struct {
	at  time.Time
	out []master.Outgoing
}

// paced reports whether some datagram of r must wait.
func (r timedReply) paced() bool {
	return len(r.out) > 0 && r.out[len(r.out)-1].Delay > 0
}

// pacedReply is a paced reply being sent: out[next:] are still to go, the
// first of them at due.
type pacedReply struct {
	timedReply
	next int
	due  time.Time
}

// pacedHeap orders the paced replies by their next datagram's time.
type pacedHeap []*pacedReply

func (h pacedHeap) Len() int           { return len(h) }
func (h pacedHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h pacedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pacedHeap) Push(x any)        { *h = append(*h, x.(*pacedReply)) }
func (h *pacedHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}

// sendLoop is a socket's sender goroutine: it sends the long replies of
// queue at once and the paced ones datagram by datagram when each is due,
// until queue is closed (the paced datagrams still waiting then are
// dropped: the master is stopping).
func (s *PacketServer) sendLoop(conn PacketConn, queue <-chan timedReply) {
	snd := newSender(conn)
	var waiting pacedHeap
	held := 0 // datagrams waiting
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var tick <-chan time.Time
		if len(waiting) > 0 {
			timer.Reset(time.Until(waiting[0].due))
			tick = timer.C
		}
		select {
		case r, ok := <-queue:
			if !ok {
				return
			}
			if !r.paced() {
				s.writeBatched(snd, r.out)
				continue
			}
			if held+len(r.out) > MaxPacedDatagrams {
				s.queueFull.Add(1)
				s.log.Debug("paced reply dropped: too many datagrams waiting", "to", r.out[0].To, "datagrams", len(r.out))
				continue
			}
			held += len(r.out)
			s.paced.Add(1)
			heap.Push(&waiting, &pacedReply{timedReply: r, due: r.at.Add(r.out[0].Delay)})
		case <-tick:
		}
		timer.Stop()
		now := time.Now()
		for len(waiting) > 0 && !waiting[0].due.After(now) {
			p := waiting[0]
			j := p.next
			for j < len(p.out) && !p.at.Add(p.out[j].Delay).After(now) {
				j++
			}
			s.writeBatched(snd, p.out[p.next:j])
			clear(p.out[p.next:j]) // drop references to payloads
			held -= j - p.next
			p.next = j
			if j == len(p.out) {
				heap.Pop(&waiting)
				continue
			}
			p.due = p.at.Add(p.out[j].Delay)
			heap.Fix(&waiting, 0)
		}
	}
}
