package master

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
)

// PacketConn is the part of *net.UDPConn the server uses.
type PacketConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	SetReadDeadline(t time.Time) error
	LocalAddr() net.Addr
}

// Store keeps the registry on disk (master/store implements it).
type Store interface {
	Put(Server) error
	Delete(netip.AddrPort) error
	Load() (servers []Server, corrupt int, err error)
}

// TickInterval is how often the server expires servers and sends due
// re-probes.
const TickInterval = time.Second

// maxDatagram is the largest UDP payload read.
const maxDatagram = 65535

// PacketServer is the socket shell around a Handler: one goroutine per socket
// reads, timestamps each datagram at the read, calls the handler and
// writes what it returns. Replies leave by the socket the request came in
// on when the address family allows, else by the first master socket of
// the destination's family.
//
// mu guards conns.
type PacketServer struct {
	h   *Handler
	log *slog.Logger

	sendErrors atomic.Uint64
	noSocket   atomic.Uint64

	mu    sync.Mutex
	conns []PacketConn // master sockets, for probes and forwards
}

// NewPacketServer returns a packet server around h.
func NewPacketServer(h *Handler, log *slog.Logger) *PacketServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PacketServer{h: h, log: log}
}

// Handler returns the server's handler.
func (s *PacketServer) Handler() *Handler { return s.h }

// SendErrors returns the datagrams the kernel refused, and those with no
// socket of their address family.
func (s *PacketServer) SendErrors() (refused, noSocket uint64) {
	return s.sendErrors.Load(), s.noSocket.Load()
}

// Serve reads conn until ctx ends (then it returns nil) or the socket
// fails. motd selects the message-of-the-day handler. The caller owns
// conn and closes it after Serve returns.
func (s *PacketServer) Serve(ctx context.Context, conn PacketConn, motd bool) error {
	if !motd {
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		defer s.forget(conn)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, maxDatagram)
	var out []Outgoing
	snd := newSender(conn)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		now := time.Now()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if motd {
			out = s.h.HandleMOTD(now, from, buf[:n], out[:0])
		} else {
			out = s.h.HandlePacket(now, from, buf[:n], out[:0])
		}
		s.writeBatched(snd, out)
		clear(out) // drop references to payloads
	}
}

func (s *PacketServer) forget(conn PacketConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.conns {
		if c == conn {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			return
		}
	}
}

// family4 reports whether conn sends to IPv4 addresses (a udp4 socket).
func family4(conn PacketConn) bool {
	a, ok := conn.LocalAddr().(*net.UDPAddr)
	return ok && a.IP.To4() != nil
}

func (s *PacketServer) write(via PacketConn, out []Outgoing) {
	for _, o := range out {
		c := via
		if c == nil || family4(c) != o.To.Addr().Is4() {
			c = s.connFor(o.To)
		}
		if c == nil {
			s.noSocket.Add(1)
			continue
		}
		if _, err := c.WriteToUDPAddrPort(o.Payload, o.To); err != nil {
			s.sendErrors.Add(1)
			s.log.Debug("send failed", "to", o.To, "kind", o.Kind, "err", err)
		}
	}
}

// sender is one socket goroutine's reusable state for sending a reply's
// datagrams in one sendmmsg system call (ipv4.PacketConn.WriteBatch;
// outside Linux one at a time), with UDP segmentation offload where the
// kernel has it: a run of equal-sized datagrams (a server-list reply is
// mostly 1,387-byte packets) goes down the stack as one buffer that the
// kernel cuts up (UDP_SEGMENT), which saves most of the per-datagram
// cost. A datagram stays a datagram on the wire. It is used for IPv4
// destinations of a udp4 socket; anything else goes by write, one
// datagram at a time.
type sender struct {
	conn  PacketConn
	batch *ipv4.PacketConn // nil: no batching on this socket
	gso   bool             // use UDP_SEGMENT; cleared if the kernel refuses it
	msgs  []ipv4.Message
	bufs  [][]byte // msgs[i].Buffers is bufs[i : i+1]
	flat  []byte   // the runs' payloads, back to back
	oob   []byte   // the runs' control messages
	ip    [4]byte
	addr  net.UDPAddr
}

// gsoMaxBytes bounds a segmented send (an IPv4 datagram's 65,535 bytes,
// less headers).
const gsoMaxBytes = 60000

func newSender(conn PacketConn) *sender {
	b := &sender{conn: conn, gso: gsoSupported}
	if uc, ok := conn.(*net.UDPConn); ok && family4(conn) {
		b.batch = ipv4.NewPacketConn(uc)
	}
	return b
}

// writeBatched sends out by b's socket, a run of datagrams to one IPv4
// address in one batch.
func (s *PacketServer) writeBatched(b *sender, out []Outgoing) {
	for len(out) > 0 {
		n := 1
		for n < len(out) && out[n].To == out[0].To {
			n++
		}
		if b.batch == nil || n == 1 || !out[0].To.Addr().Is4() {
			s.write(b.conn, out[:n])
		} else {
			s.sendBatch(b, out[:n])
		}
		out = out[n:]
	}
}

// sendBatch sends out, all to one IPv4 address, by sendmmsg, runs of
// equal-sized datagrams segmented by the kernel if b.gso. A message the
// kernel refuses is counted and skipped, the rest still go; a refused
// segmented message turns segmentation off and is sent again without it.
func (s *PacketServer) sendBatch(b *sender, out []Outgoing) {
	to := out[0].To
	b.ip = to.Addr().As4()
	b.addr = net.UDPAddr{IP: b.ip[:], Port: int(to.Port())}
	for {
		b.pack(out)
		failed := false
		for sent := 0; sent < len(b.msgs); {
			n, err := b.batch.WriteBatch(b.msgs[sent:], 0)
			if err != nil {
				if len(b.msgs[sent].OOB) > 0 {
					s.log.Debug("UDP segmentation refused, sending datagrams one by one", "err", err)
					b.gso, failed = false, true
					break
				}
				s.sendErrors.Add(1)
				s.log.Debug("send failed", "to", to, "err", err)
				n = 1
			}
			sent += n
		}
		clear(b.bufs) // drop references to payloads
		if !failed {
			return
		}
		// Sent again from the start: a refusal is met once per socket,
		// on its first reply, before anything of it left.
	}
}

// pack fills b.msgs for out.
func (b *sender) pack(out []Outgoing) {
	b.msgs, b.bufs, b.flat, b.oob = b.msgs[:0], b.bufs[:0], b.flat[:0], b.oob[:0]
	for i := 0; i < len(out); {
		size := len(out[i].Payload)
		n := 1
		if b.gso {
			for i+n < len(out) && n < gsoMaxSegments && len(out[i+n].Payload) == size && (n+1)*size <= gsoMaxBytes {
				n++
			}
		}
		if n == 1 {
			b.bufs = append(b.bufs, out[i].Payload)
			b.msgs = append(b.msgs, ipv4.Message{Addr: &b.addr})
		} else {
			f, o := len(b.flat), len(b.oob)
			for _, d := range out[i : i+n] {
				b.flat = append(b.flat, d.Payload...)
			}
			b.oob = appendUDPSegment(b.oob, size)
			b.bufs = append(b.bufs, b.flat[f:len(b.flat):len(b.flat)])
			b.msgs = append(b.msgs, ipv4.Message{Addr: &b.addr, OOB: b.oob[o:len(b.oob):len(b.oob)]})
		}
		i += n
	}
	// b.flat and b.oob may have moved while growing: point at them last.
	f, o := 0, 0
	for j := range b.msgs {
		if oob := b.msgs[j].OOB; len(oob) > 0 {
			n := len(b.bufs[j])
			b.bufs[j] = b.flat[f : f+n : f+n]
			b.msgs[j].OOB = b.oob[o : o+len(oob) : o+len(oob)]
			f, o = f+n, o+len(oob)
		}
		b.msgs[j].Buffers = b.bufs[j : j+1]
	}
}

func (s *PacketServer) connFor(to netip.AddrPort) PacketConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if family4(c) == to.Addr().Is4() {
			return c
		}
	}
	return nil
}

// Tick runs the handler's timed work every interval until ctx ends.
func (s *PacketServer) Tick(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		out := s.h.Tick(time.Now(), nil)
		s.write(nil, out)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// storeWriter is the Persister the server gives its handler: Put and
// Delete record the latest state of each address and wake a writer
// goroutine, so the packet path never waits for the disk. Pending
// writes are bounded by the registry's MaxServers (one per address).
//
// mu guards pending.
type storeWriter struct {
	st   Store
	log  *slog.Logger
	wake chan struct{}
	errs atomic.Uint64

	mu      sync.Mutex
	pending map[netip.AddrPort]*Server // nil value: delete
}

func newStoreWriter(st Store, log *slog.Logger) *storeWriter {
	return &storeWriter{st: st, log: log, wake: make(chan struct{}, 1), pending: make(map[netip.AddrPort]*Server)}
}

func (w *storeWriter) Put(s Server) { w.set(s.Addr, &s) }

func (w *storeWriter) Delete(a netip.AddrPort) { w.set(a, nil) }

func (w *storeWriter) set(a netip.AddrPort, s *Server) {
	w.mu.Lock()
	w.pending[a] = s
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes pending changes until ctx ends, then writes what is left.
func (w *storeWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			w.flush()
			return
		case <-w.wake:
			w.flush()
		}
	}
}

func (w *storeWriter) flush() {
	w.mu.Lock()
	batch := w.pending
	w.pending = make(map[netip.AddrPort]*Server)
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	defer w.log.Debug("state written", "changes", len(batch))
	for a, s := range batch {
		var err error
		if s == nil {
			err = w.st.Delete(a)
		} else {
			err = w.st.Put(*s)
		}
		if err != nil {
			w.errs.Add(1)
			w.log.Error("writing the state file", "server", a, "err", err)
		}
	}
}

// Master is a running scout master: its handler, sockets and store.
type Master struct {
	Settings Settings
	Server   *PacketServer
	Handler  *Handler
	Registry *Registry
	Log      *slog.Logger

	store  Store
	writer *storeWriter
	conns  []*net.UDPConn
	motd   []*net.UDPConn

	closeOnce sync.Once
}

// NewMaster builds a master from settings: registry, defences, handler,
// and the servers restored from st (nil: no persistence). It opens no
// socket yet.
func NewMaster(now time.Time, set Settings, st Store, log *slog.Logger) (*Master, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	chal, err := NewChallenger(set.RotationPeriod, rand.Reader)
	if err != nil {
		return nil, err
	}
	reg, err := NewRegistry(set.Registry, chal)
	if err != nil {
		return nil, err
	}
	hc := set.Handler
	hc.Registry, hc.Logger = reg, log
	if set.FloodProtection {
		if hc.Queries, err = NewSourceLimiter(set.FPThrottle, set.FPDecay, set.MaxSources); err != nil {
			return nil, err
		}
	}
	if hc.Heartbeats, err = NewSourceLimiter(set.HBThrottle, set.HBDecay, set.MaxSources); err != nil {
		return nil, err
	}
	if hc.Budget, err = NewByteBudget(set.OutRate, set.OutBurst); err != nil {
		return nil, err
	}
	m := &Master{Settings: set, Registry: reg, Log: log, store: st}
	if st != nil {
		servers, corrupt, err := st.Load()
		if err != nil {
			return nil, fmt.Errorf("master: loading the state: %w", err)
		}
		n, skipped := reg.Restore(now, servers)
		log.Info("restored", "servers", n, "skipped", len(skipped), "corrupt", corrupt)
		m.writer = newStoreWriter(st, log)
		hc.Persist = m.writer
		// Servers the current configuration refuses leave the state.
		for _, r := range skipped {
			m.writer.Delete(r.Addr)
		}
	}
	h, err := NewHandler(hc)
	if err != nil {
		return nil, err
	}
	m.Handler = h
	m.Server = NewPacketServer(h, log)
	return m, nil
}

// Listen opens the master and MOTD sockets. A default (not -l) IPv6
// socket that cannot be opened is skipped with a warning, as dpmaster
// does.
func (m *Master) Listen() error {
	open := func(a netip.AddrPort, explicit bool) (*net.UDPConn, error) {
		network := "udp4"
		if a.Addr().Is6() && !a.Addr().Is4In6() {
			network = "udp6"
		}
		c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(a))
		if err != nil && !explicit && network == "udp6" {
			m.Log.Warn("IPv6 socket not opened", "addr", a, "err", err)
			return nil, nil
		}
		return c, err
	}
	for _, a := range m.Settings.Listen {
		c, err := open(a, m.Settings.ListenExplicit)
		if err != nil {
			m.Close()
			return err
		}
		if c != nil {
			m.conns = append(m.conns, c)
			m.Log.Info("listening", "addr", c.LocalAddr().String(), "port", "master")
		}
	}
	for _, a := range m.Settings.MOTDListen {
		c, err := open(a, m.Settings.ListenExplicit)
		if err != nil {
			m.Close()
			return err
		}
		if c != nil {
			m.motd = append(m.motd, c)
			m.Log.Info("listening", "addr", c.LocalAddr().String(), "port", "motd")
		}
	}
	if len(m.conns) == 0 {
		return errors.New("master: no socket to listen on")
	}
	return nil
}

// Addrs returns the addresses of the open master sockets.
func (m *Master) Addrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, c := range m.conns {
		out = append(out, c.LocalAddr().(*net.UDPAddr).AddrPort())
	}
	return out
}

// Run serves every socket, the ticker and the state writer until ctx
// ends, then closes the sockets and writes what is pending.
func (m *Master) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	serve := func(c *net.UDPConn, motd bool) {
		wg.Go(func() {
			if err := m.Server.Serve(ctx, c, motd); err != nil {
				cancel(fmt.Errorf("socket %v: %w", c.LocalAddr(), err))
			}
		})
	}
	for _, c := range m.conns {
		serve(c, false)
	}
	for _, c := range m.motd {
		serve(c, true)
	}
	wg.Go(func() { m.Server.Tick(ctx, TickInterval) })
	var wdone chan struct{}
	if m.writer != nil {
		wdone = make(chan struct{})
		wctx, wcancel := context.WithCancel(context.Background())
		go func() { m.writer.run(wctx); close(wdone) }()
		defer func() { wcancel(); <-wdone }()
	}
	<-ctx.Done()
	wg.Wait()
	m.Close()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// Close closes the sockets. It is idempotent.
func (m *Master) Close() error {
	m.closeOnce.Do(func() {
		for _, c := range append(m.conns, m.motd...) {
			c.Close()
		}
	})
	return nil
}

// StdLogger returns the logger the settings ask for, writing to w.
func StdLogger(set Settings, w io.Writer) *slog.Logger {
	if set.LogOff {
		return slog.New(slog.DiscardHandler)
	}
	opts := &slog.HandlerOptions{Level: set.LogLevel}
	if set.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
