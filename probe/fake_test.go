package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/internal/fakeudp"
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
// (bubble) time; reading and deadlines are fakeudp.Inbox's.
type fakeConn struct {
	fakeudp.Inbox

	mu       sync.Mutex // guards writeErr
	writeErr error

	handler func(p packet) // called with each write, on the writer's goroutine
}

func newFakeConn(handler func(packet)) *fakeConn {
	return &fakeConn{handler: handler}
}

// deliver queues b from from for reading after delay.
func (c *fakeConn) deliver(from netip.AddrPort, b []byte, delay time.Duration) {
	c.Deliver(from, b, delay)
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
