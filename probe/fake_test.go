package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// echoDialect is a toy protocol for engine tests:
//
//	request  "Q<kind> <token:16 hex>"
//	reply    "R<kind> <token:16 hex> <payload>"   matched by token
//	reply    "N<kind> <payload>"                  matched by address and kind
//
// A payload "more" leaves the step open (one part of a split reply); a
// payload "next" asks for a follow-up step of kind+1.
type echoDialect struct{ steps int }

func (echoDialect) Name() string        { return "echo" }
func (echoDialect) DefaultPort() uint16 { return 9 }
func (d echoDialect) begin() []step {
	st := make([]step, max(d.steps, 1))
	for i := range st {
		st[i].kind = uint8(i)
	}
	return st
}
func (echoDialect) tokenMask() uint64 { return ^uint64(0) }
func (echoDialect) appendRequest(b []byte, st *step, tok uint64) ([]byte, error) {
	return fmt.Appendf(b, "Q%d %016x", st.kind, tok), nil
}
func (echoDialect) parse(b []byte) (reply, error) {
	f := strings.SplitN(string(b), " ", 3)
	if len(f) < 2 || len(f[0]) != 2 {
		return reply{}, errors.New("echo: not a reply")
	}
	kind := f[0][1] - '0'
	switch f[0][0] {
	case 'R':
		tok, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil || len(f) != 3 {
			return reply{}, errors.New("echo: bad token")
		}
		return reply{token: tok, hasToken: true, kind: kind, msg: f[2]}, nil
	case 'N':
		return reply{kind: kind, msg: strings.Join(f[1:], " ")}, nil
	}
	return reply{}, errors.New("echo: not a reply")
}
func (echoDialect) handle(st *step, rep reply, res *Result) ([]step, bool, error) {
	if rep.kind != st.kind {
		return nil, false, fmt.Errorf("echo: reply %d to request %d", rep.kind, st.kind)
	}
	p := rep.msg.(string)
	res.Info.Set(fmt.Sprintf("k%d", st.kind), p)
	switch p {
	case "more":
		return nil, false, nil
	case "next":
		return []step{{kind: st.kind + 1}}, true, nil
	}
	return nil, true, nil
}
func (echoDialect) stepName(st *step) string { return fmt.Sprintf("step%d", st.kind) }

// echoRequest reads a request of echoDialect.
func echoRequest(b []byte) (kind int, tok string) {
	f := strings.Fields(string(b))
	return int(f[0][1] - '0'), f[1]
}

// packet is a datagram on the fake network.
type packet struct {
	addr netip.AddrPort // source on delivery, destination on sending
	b    []byte
}

// fakeConn is an in-process Conn for tests under testing/synctest. Writes
// go to handler, which answers through deliver, now or after a delay of
// (bubble) time.
type fakeConn struct {
	mu       sync.Mutex
	in       []packet
	deadline time.Time
	kick     chan struct{} // closed when in or deadline changes
	writeErr error

	handler func(p packet) // called with each write, on the writer's goroutine
}

func newFakeConn(handler func(packet)) *fakeConn {
	return &fakeConn{kick: make(chan struct{}), handler: handler}
}

func (c *fakeConn) wakeLocked() {
	close(c.kick)
	c.kick = make(chan struct{})
}

// deliver queues b from from for reading after delay.
func (c *fakeConn) deliver(from netip.AddrPort, b []byte, delay time.Duration) {
	b = append([]byte(nil), b...)
	push := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.in = append(c.in, packet{from, b})
		c.wakeLocked()
	}
	if delay <= 0 {
		push()
		return
	}
	time.AfterFunc(delay, push)
}

func (c *fakeConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		c.mu.Lock()
		if len(c.in) > 0 {
			p := c.in[0]
			c.in = c.in[1:]
			c.mu.Unlock()
			return copy(b, p.b), p.addr, nil
		}
		d, kick := c.deadline, c.kick
		c.mu.Unlock()
		if d.IsZero() {
			<-kick
			continue
		}
		wait := time.Until(d)
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

func (c *fakeConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	c.mu.Lock()
	err := c.writeErr
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	c.handler(packet{addr, append([]byte(nil), b...)})
	return len(b), nil
}

func (c *fakeConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	c.wakeLocked()
	return nil
}
