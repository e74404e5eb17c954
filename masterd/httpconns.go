package masterd

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP server limits: what a client, or many, can hold of the master's
// HTTP side. Each is a field of HTTPLimits; zero means the default.
const (
	// DefaultHTTPReadHeaderTimeout bounds reading a request's header,
	// from the connection's accept or the end of the previous request:
	// a connection that sends nothing is closed after it.
	DefaultHTTPReadHeaderTimeout = 5 * time.Second
	// DefaultHTTPReadTimeout bounds reading a whole request.
	DefaultHTTPReadTimeout = 10 * time.Second
	// DefaultHTTPWriteTimeout bounds writing a response: the largest, the
	// legacy /servers of 16,384 servers gzipped (about 1 MB), takes 8 s
	// at 1 Mbit/s.
	DefaultHTTPWriteTimeout = time.Minute
	// DefaultHTTPIdleTimeout is how long a kept-alive connection may wait
	// for its next request.
	DefaultHTTPIdleTimeout = 30 * time.Second
	// DefaultHTTPMaxConns bounds the open HTTP connections (at most half
	// the process's file limit). At the bound a new connection takes the
	// place of the oldest idle one (a connection that has sent nothing
	// yet, or waits between requests); if every one is busy it is
	// closed: many idle connections cannot keep real clients out, and
	// the master never runs out of file descriptors for its sockets and
	// state file.
	DefaultHTTPMaxConns = 4096
	// DefaultHTTPMaxConnsPerClient bounds the open connections of one
	// client (an IPv4 address, an IPv6 /64); beyond, a new one is closed
	// at once. A browser opens six.
	DefaultHTTPMaxConnsPerClient = 64
)

// HTTPLimits are the HTTP server's timeouts and connection caps (the JSON
// API's request limits are web.Config's). The zero value of a field is its
// default; a change needs a restart.
type HTTPLimits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxConns, MaxConnsPerClient                               int
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	or := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	or(&l.ReadHeaderTimeout, DefaultHTTPReadHeaderTimeout)
	or(&l.ReadTimeout, DefaultHTTPReadTimeout)
	or(&l.WriteTimeout, DefaultHTTPWriteTimeout)
	or(&l.IdleTimeout, DefaultHTTPIdleTimeout)
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultHTTPMaxConns
		if n := fileLimit(); n > 0 && n/2 < uint64(l.MaxConns) {
			l.MaxConns = max(int(n/2), 16)
		}
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = DefaultHTTPMaxConnsPerClient
	}
	return l
}

// server returns the http.Server for h with these limits over cl.
func (l HTTPLimits) server(h http.Handler, cl *connLimiter) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ConnState:         cl.state,
	}
}

// connLimiter is a listener that bounds the connections it hands out, in
// all and per client (HTTPLimits). The server tells it each connection's
// state (ConnState), so that at the bound a new connection can take the
// place of the oldest idle one.
//
// mu guards conns and byClient.
type connLimiter struct {
	net.Listener
	max, perClient int

	refusedClient, refusedFull, evicted atomic.Uint64

	mu       sync.Mutex
	conns    map[*limitedConn]struct{}
	byClient map[netip.Prefix]int
}

func newConnLimiter(ln net.Listener, l HTTPLimits) *connLimiter {
	return &connLimiter{Listener: ln, max: l.MaxConns, perClient: l.MaxConnsPerClient,
		conns: map[*limitedConn]struct{}{}, byClient: map[netip.Prefix]int{}}
}

// limitedConn is a connection the limiter counts; idle is set while it
// has sent nothing yet or waits between requests.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	key  netip.Prefix
	at   time.Time
	idle atomic.Bool
	once sync.Once
}

// Close closes the connection and forgets it.
func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forgetLocked(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func (l *connLimiter) forgetLocked(c *limitedConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byClient[c.key]--; l.byClient[c.key] <= 0 {
		delete(l.byClient, c.key)
	}
}

// clientOf is a connection's client: its IPv4 address or IPv6 /64.
func clientOf(a net.Addr) netip.Prefix {
	ap, _ := netip.ParseAddrPort(a.String())
	ad := ap.Addr().Unmap().WithZone("")
	bits := 32
	if ad.Is6() {
		bits = 64
	}
	p, _ := ad.Prefix(bits)
	return p
}

// Accept returns the next connection within the bounds, closing those
// beyond them.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientOf(c.RemoteAddr())
		lc := &limitedConn{Conn: c, l: l, key: key, at: time.Now()}
		lc.idle.Store(true)
		var evict *limitedConn
		l.mu.Lock()
		switch {
		case l.byClient[key] >= l.perClient:
			l.mu.Unlock()
			l.refusedClient.Add(1)
			c.Close()
			continue
		case len(l.conns) >= l.max:
			if evict = l.oldestIdleLocked(); evict == nil {
				l.mu.Unlock()
				l.refusedFull.Add(1)
				c.Close()
				continue
			}
			l.forgetLocked(evict)
		}
		l.conns[lc] = struct{}{}
		l.byClient[key]++
		l.mu.Unlock()
		if evict != nil {
			l.evicted.Add(1)
			evict.Close()
		}
		return lc, nil
	}
}

// oldestIdleLocked returns the idle connection accepted first, or nil.
func (l *connLimiter) oldestIdleLocked() *limitedConn {
	var old *limitedConn
	for c := range l.conns {
		if c.idle.Load() && (old == nil || c.at.Before(old.at)) {
			old = c
		}
	}
	return old
}

// state is the server's ConnState hook.
func (l *connLimiter) state(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateNew, http.StateIdle:
		lc.idle.Store(true)
	case http.StateActive:
		lc.idle.Store(false)
	case http.StateHijacked, http.StateClosed:
		lc.once.Do(func() {
			l.mu.Lock()
			l.forgetLocked(lc)
			l.mu.Unlock()
		})
	}
}

// Open returns the connections open now.
func (l *connLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
