// Package fakeudp is the receiving half of an in-process UDP socket for
// tests that run under testing/synctest: datagrams are queued with a delay
// measured on the (bubble's) clock, and reads block until one is queued or
// the read deadline passes, as on a *net.UDPConn.
//
// Test fakes embed an Inbox and add their own sending half (who answers a
// write, and after how long), which is where the fakes of the probe and
// discover packages differ.
package fakeudp

import (
	"net/netip"
	"os"
	"sync"
	"time"
)

// Inbox queues datagrams for reading. The zero value is ready to use; it is
// safe for concurrent use.
type Inbox struct {
	mu       sync.Mutex // guards the fields below
	in       []datagram
	deadline time.Time
	kick     chan struct{} // closed when in or deadline changes; nil until first needed
}

type datagram struct {
	from netip.AddrPort
	b    []byte
}

// wakeLocked wakes every blocked reader.
func (x *Inbox) wakeLocked() {
	if x.kick != nil {
		close(x.kick)
	}
	x.kick = make(chan struct{})
}

func (x *Inbox) kickLocked() chan struct{} {
	if x.kick == nil {
		x.kick = make(chan struct{})
	}
	return x.kick
}

// Deliver queues a copy of b from from, now or after delay.
func (x *Inbox) Deliver(from netip.AddrPort, b []byte, delay time.Duration) {
	b = append([]byte(nil), b...)
	push := func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.in = append(x.in, datagram{from, b})
		x.wakeLocked()
	}
	if delay <= 0 {
		push()
		return
	}
	time.AfterFunc(delay, push)
}

// ReadFromUDPAddrPort returns the oldest queued datagram, waiting for one
// until the read deadline; past it, it returns os.ErrDeadlineExceeded.
func (x *Inbox) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		x.mu.Lock()
		if len(x.in) > 0 {
			d := x.in[0]
			x.in = x.in[1:]
			x.mu.Unlock()
			return copy(b, d.b), d.from, nil
		}
		deadline, kick := x.deadline, x.kickLocked()
		x.mu.Unlock()
		if deadline.IsZero() {
			<-kick
			continue
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
		}
		t := time.NewTimer(wait)
		select {
		case <-kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// SetReadDeadline sets the deadline of reads, waking blocked readers; the
// zero time means none.
func (x *Inbox) SetReadDeadline(t time.Time) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deadline = t
	x.wakeLocked()
	return nil
}
