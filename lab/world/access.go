package world

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// WireOverhead is what a datagram costs on an access link beyond its UDP
// payload: the IPv4 and UDP headers. Link-layer framing is left out (it
// differs between DSL, cable and Ethernet); a rate is therefore a rate of
// IP bytes.
const WireOverhead = 20 + 8

// Limits of an AccessLink.
const (
	// MinAccessRate is the slowest link accepted (bits per second): a
	// 1,500-byte datagram takes 1.2 s to cross it.
	MinAccessRate = 10_000
	// MaxAccessRate is the fastest (bits per second): beyond it the link
	// is no bottleneck next to loopback and the emulator's own send rate.
	MaxAccessRate = 100e9
	// MaxAccessQueue bounds the queue, as the time to drain it at the
	// link's rate: the deepest buffers measured on consumer links hold a
	// few seconds.
	MaxAccessQueue = 10 * time.Second
	// MaxAccessClients bounds the clients the emulator keeps a link state
	// for; past it, links idle for IdleAccessLink are forgotten, and a
	// client that still finds no room is served without a link (counted
	// in Stats.LinkUnshaped).
	MaxAccessClients = 4096
	// IdleAccessLink is how long a client's link must have been empty
	// before its state may be forgotten.
	IdleAccessLink = time.Second
)

// AccessLink is a client's access link: the line between the player's
// place and the Internet, the one bottleneck every reply to that client
// shares (and, with UpRate, every request from it). Each direction is a
// Bottleneck: a FIFO of a fixed rate with a tail-drop queue. A client is
// one address and port (one socket): every datagram the world sends to it
// after its Link delay, and every datagram it sends to the world before
// that delay, crosses the same link. Heartbeats, and the replies to the
// world's masters (Config.Masters: they verify servers from elsewhere on
// the Internet), do not. The zero value is no link.
type AccessLink struct {
	// Rate is the downstream rate in bits per second (IP bytes, see
	// WireOverhead); 0 is no link.
	Rate float64 `json:"rate,omitempty"`
	// UpRate is the upstream rate in bits per second; 0 leaves requests
	// unshaped.
	UpRate float64 `json:"up_rate,omitempty"`
	// QueueBytes bounds each direction's queue in bytes (the datagram in
	// transmission included); when 0, QueueDelay does.
	QueueBytes int `json:"queue_bytes,omitempty"`
	// QueueDelay bounds each direction's queue by the time it takes to
	// drain at that direction's rate. With both zero the queue is
	// unbounded (up to MaxAccessQueue).
	QueueDelay time.Duration `json:"queue_delay,omitempty"`
}

// Enabled reports whether the link shapes anything.
func (l AccessLink) Enabled() bool { return l.Rate > 0 || l.UpRate > 0 }

// Validate checks the link against the limits above.
func (l AccessLink) Validate() error {
	for _, r := range []float64{l.Rate, l.UpRate} {
		if r != 0 && !(r >= MinAccessRate && r <= MaxAccessRate) {
			return fmt.Errorf("world: access link rate %g bit/s not in %d..%g", r, MinAccessRate, MaxAccessRate)
		}
	}
	if l.QueueBytes < 0 || l.QueueDelay < 0 || l.QueueDelay > MaxAccessQueue {
		return fmt.Errorf("world: access link queue %d bytes / %v: negative, or longer than %v", l.QueueBytes, l.QueueDelay, MaxAccessQueue)
	}
	for _, r := range []float64{l.Rate, l.UpRate} {
		if r > 0 && l.QueueBytes > 0 && float64(l.QueueBytes)*8/r > MaxAccessQueue.Seconds() {
			return fmt.Errorf("world: access link queue of %d bytes takes longer than %v to drain at %g bit/s", l.QueueBytes, MaxAccessQueue, r)
		}
	}
	return nil
}

// bottleneck returns the model of one direction of rate bits/s; ok is
// false when that direction is not shaped.
func (l AccessLink) bottleneck(rate float64) (Bottleneck, bool) {
	if rate <= 0 {
		return Bottleneck{}, false
	}
	limit := l.QueueBytes
	if limit == 0 {
		d := l.QueueDelay
		if d == 0 {
			d = MaxAccessQueue
		}
		limit = int(d.Seconds() * rate / 8)
	}
	return Bottleneck{Rate: rate, Limit: max(limit, 1)}, true
}

// Bottleneck is one direction of an access link: datagrams cross it one
// after the other at Rate, waiting in a FIFO queue of at most Limit bytes
// (the datagram being transmitted included); a datagram that does not fit
// is dropped (tail drop), as a router's interface queue does. It is a pure
// model: the time of every arrival is passed in, in non-decreasing order.
type Bottleneck struct {
	// Rate in bits per second; Limit in bytes.
	Rate  float64
	Limit int
	// free is when the link has sent everything admitted so far.
	free time.Time
}

// Admit offers a datagram of size bytes (on the wire) arriving at at, and
// returns when its last bit has crossed the link, or dropped when the
// queue has no room for it. An arrival earlier than the previous one is
// taken as arriving with it.
func (b *Bottleneck) Admit(at time.Time, size int) (leave time.Time, dropped bool) {
	start := at
	if b.free.After(at) {
		start = b.free
	}
	if b.Backlog(at)+size > b.Limit {
		return time.Time{}, true
	}
	b.free = start.Add(b.transmit(size))
	return b.free, false
}

// Backlog returns the bytes queued or in transmission at at.
func (b *Bottleneck) Backlog(at time.Time) int {
	if !b.free.After(at) {
		return 0
	}
	return int(b.free.Sub(at).Seconds() * b.Rate / 8)
}

// Delay returns how long a datagram arriving at at would wait before its
// transmission begins: the queueing delay.
func (b *Bottleneck) Delay(at time.Time) time.Duration {
	if !b.free.After(at) {
		return 0
	}
	return b.free.Sub(at)
}

// transmit is the time size bytes take to cross the link.
func (b *Bottleneck) transmit(size int) time.Duration {
	return time.Duration(float64(size) * 8 / b.Rate * float64(time.Second))
}

// accessLinks holds one direction of every client's access link. Not safe
// for concurrent use: the downstream set belongs to the releaser, the
// upstream set to the reader.
type accessLinks struct {
	proto Bottleneck // a fresh link
	on    bool
	links map[netip.AddrPort]*Bottleneck
}

func newAccessLinks(l AccessLink, rate float64) *accessLinks {
	b, on := l.bottleneck(rate)
	return &accessLinks{proto: b, on: on, links: map[netip.AddrPort]*Bottleneck{}}
}

// linkVerdict is what a client's access link did to one datagram.
type linkVerdict uint8

const (
	linkPass     linkVerdict = iota // no link: on as it is
	linkShaped                      // leaves at the time returned
	linkDropped                     // tail drop
	linkUnshaped                    // no room for the client's state: passed unshaped
)

// admit passes a datagram of size payload bytes to or from client at at
// through that client's link.
func (a *accessLinks) admit(client netip.AddrPort, at time.Time, size int) (time.Time, time.Duration, linkVerdict) {
	if !a.on {
		return at, 0, linkPass
	}
	b := a.links[client]
	if b == nil {
		if len(a.links) >= MaxAccessClients {
			for c, o := range a.links {
				if at.Sub(o.free) > IdleAccessLink {
					delete(a.links, c)
				}
			}
		}
		if len(a.links) >= MaxAccessClients {
			return at, 0, linkUnshaped
		}
		b = new(Bottleneck)
		*b = a.proto
		a.links[client] = b
	}
	wait := b.Delay(at)
	leave, dropped := b.Admit(at, size+WireOverhead)
	if dropped {
		return time.Time{}, wait, linkDropped
	}
	return leave, wait, linkShaped
}

// String describes the link for a summary line: "no access link", or
// its rates and queue.
func (l AccessLink) String() string {
	if !l.Enabled() {
		return "no access link"
	}
	q := fmt.Sprint(l.QueueDelay)
	if l.QueueBytes > 0 {
		q = fmt.Sprintf("%d bytes", l.QueueBytes)
	}
	s := fmt.Sprintf("access link %s down", rateString(l.Rate))
	if l.UpRate > 0 {
		s += fmt.Sprintf(", %s up", rateString(l.UpRate))
	}
	return s + ", queue " + q
}

func rateString(r float64) string {
	switch {
	case r == 0:
		return "unshaped"
	case r >= 1e9:
		return strconv.FormatFloat(r/1e9, 'g', -1, 64) + " Gbit/s"
	case r >= 1e6:
		return strconv.FormatFloat(r/1e6, 'g', -1, 64) + " Mbit/s"
	case r >= 1e3:
		return strconv.FormatFloat(r/1e3, 'g', -1, 64) + " kbit/s"
	}
	return strconv.FormatFloat(r, 'g', -1, 64) + " bit/s"
}
