package masterd

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/scout-discovery/scout/master"
)

// PacketConn is the part of *net.UDPConn the server uses.
type PacketConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	SetReadDeadline(t time.Time) error
	LocalAddr() net.Addr
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
	h   *master.Handler
	log *slog.Logger

	sendErrors atomic.Uint64
	noSocket   atomic.Uint64
	queueFull  atomic.Uint64
	encodeFull atomic.Uint64
	paced      atomic.Uint64

	mu    sync.Mutex
	conns []PacketConn // master sockets, for probes and forwards
}

// NewPacketServer returns a packet server around h.
func NewPacketServer(h *master.Handler, log *slog.Logger) *PacketServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PacketServer{h: h, log: log}
}

// Handler returns the server's handler.
func (s *PacketServer) Handler() *master.Handler { return s.h }

// SendErrors returns the datagrams the kernel refused, and those with no
// socket of their address family.
func (s *PacketServer) SendErrors() (refused, noSocket uint64) {
	return s.sendErrors.Load(), s.noSocket.Load()
}

// QueueDrops returns the long replies dropped because their socket's
// sender already had MaxQueuedReplies queued, or MaxPacedDatagrams
// waiting in paced replies.
func (s *PacketServer) QueueDrops() uint64 { return s.queueFull.Load() }

// Paced returns the paced replies the senders took (pacer.go).
func (s *PacketServer) Paced() uint64 { return s.paced.Load() }

// EncodeDrops returns the list queries dropped because their socket's
// encoder already had MaxQueuedEncodings waiting.
func (s *PacketServer) EncodeDrops() uint64 { return s.encodeFull.Load() }

// Long replies (a server list of a large listing: 3,762 datagrams, 5 MB
// for 700,000 servers) are sent by a sender goroutine per socket, so that
// the socket loop goes on reading while they leave; shorter ones are
// sent by the loop itself.
const (
	// AsyncReplyDatagrams is the length from which a reply is queued to
	// the socket's sender goroutine.
	AsyncReplyDatagrams = 64
	// MaxQueuedReplies bounds the replies queued per socket; a long
	// reply that finds the queue full is dropped and counted
	// (QueueDrops, send_errors_total{error="queue_full"}): its bytes were
	// reserved from the limits already, so a flood of list queries costs
	// no more than without the queue.
	MaxQueuedReplies = 8
)

// The reply to a list query that selects many servers and is not cached
// for the current listing (its first query of that shape since the
// listing changed) is encoded by an encoder goroutine per socket, not by
// the socket loop: at 1,000,000 servers the encoding takes tens of
// milliseconds, during which the loop goes on reading. The encoder
// reserves each reply from the limits (response rate limiting, global
// budget) when it is encoded, before any byte of it is sent, and hands
// it to the socket's sender goroutine; queries of one shape waiting
// together are encoded once (master.Handler.Encode).
const (
	// DefaultDeferEncoding is Config.DeferEncoding when it is 0: replies
	// for a game and protocol that list at least this many servers are
	// encoded off the loop (smaller ones cost less to encode than to
	// hand over).
	DefaultDeferEncoding = 16384
	// MaxQueuedEncodings bounds the list queries waiting per socket for
	// the encoder; a query that finds the queue full is dropped and
	// counted (send_errors_total{error="encode_queue_full"}). The encoder
	// holds one uncached reply at a time, so a socket holds at most
	// 1+MaxQueuedReplies replies that are not in the answer cache (a full
	// reply of 1,000,000 IPv4 servers is 7 MB).
	MaxQueuedEncodings = 16
)

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
	var out []master.Outgoing
	snd := newSender(conn)
	queue := make(chan timedReply, MaxQueuedReplies)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		s.sendLoop(conn, queue)
	}()
	jobs := make(chan *master.Encoding, MaxQueuedEncodings)
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		s.encode(jobs, queue)
	}()
	defer func() { close(jobs); <-encoded; close(queue); <-sent }()
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
			out = s.handOver(out, jobs)
		}
		if len(out) >= AsyncReplyDatagrams || (timedReply{out: out}).paced() {
			select {
			case queue <- timedReply{at: now, out: slices.Clone(out)}:
			default:
				s.queueFull.Add(1)
				s.log.Debug("long reply dropped: sender queue full", "to", out[0].To, "datagrams", len(out))
			}
		} else {
			s.writeBatched(snd, out)
		}
		clear(out) // drop references to payloads
	}
}

// handOver passes the replies out leaves to encode to the encoder, or
// drops them if its queue is full, and returns the rest of out.
func (s *PacketServer) handOver(out []master.Outgoing, jobs chan<- *master.Encoding) []master.Outgoing {
	n := 0
	for _, o := range out {
		if o.Encode == nil {
			out[n] = o
			n++
			continue
		}
		select {
		case jobs <- o.Encode:
		default:
			s.encodeFull.Add(1)
			s.log.Debug("list query dropped: encoder queue full", "to", o.To)
		}
	}
	clear(out[n:])
	return out[:n]
}

// encode is a socket's encoder goroutine: it encodes the replies of the
// jobs, those of one shape together, and queues them to the socket's
// sender, until jobs is closed.
func (s *PacketServer) encode(jobs <-chan *master.Encoding, queue chan<- timedReply) {
	var waiting, same []*master.Encoding
	var out []master.Outgoing
	open := true
	for open || len(waiting) > 0 {
		if len(waiting) == 0 {
			j, ok := <-jobs
			if !ok {
				return
			}
			waiting = append(waiting, j)
		}
	drain:
		for open && len(waiting) < MaxQueuedEncodings {
			select {
			case j, ok := <-jobs:
				if !ok {
					open = false
					break drain
				}
				waiting = append(waiting, j)
			default:
				break drain
			}
		}
		// The first job and those waiting for the same reply.
		first := waiting[0]
		same = append(same[:0], first)
		n := 0
		for _, j := range waiting[1:] {
			if j.SameReply(first) {
				same = append(same, j)
			} else {
				waiting[n] = j
				n++
			}
		}
		clear(waiting[n:])
		waiting = waiting[:n]
		enc := s.h.Encode(time.Now(), first)
		at := time.Now()
		out = s.h.SendEncoded(at, enc, same, out[:0])
		clear(same)
		if len(out) > 0 {
			queue <- timedReply{at: at, out: slices.Clone(out)}
		}
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

func (s *PacketServer) write(via PacketConn, out []master.Outgoing) {
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
	segs  []int    // the datagrams of msgs[i]
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
func (s *PacketServer) writeBatched(b *sender, out []master.Outgoing) {
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
// segmented message turns segmentation off, and it and the rest are sent
// again without it (the messages before it left: they are not sent twice).
func (s *PacketServer) sendBatch(b *sender, out []master.Outgoing) {
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
					done := 0
					for _, k := range b.segs[:sent] {
						done += k
					}
					out = out[done:]
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
		// The refused message and those after it, again, one datagram
		// per message.
	}
}

// pack fills b.msgs for out.
func (b *sender) pack(out []master.Outgoing) {
	b.msgs, b.bufs, b.flat, b.oob, b.segs = b.msgs[:0], b.bufs[:0], b.flat[:0], b.oob[:0], b.segs[:0]
	for i := 0; i < len(out); {
		size := len(out[i].Payload)
		n := 1
		if b.gso {
			// A run of equal sizes, and a shorter datagram after it as
			// its last segment, as UDP segmentation allows.
			for i+n < len(out) && n < gsoMaxSegments && len(out[i+n].Payload) <= size && (n+1)*size <= gsoMaxBytes {
				n++
				if len(out[i+n-1].Payload) < size {
					break
				}
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
		b.segs = append(b.segs, n)
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

// SnapshotRefreshInterval is how often a listing larger than
// master.Config.InlineSnapshot has its answer snapshot brought up to date
// (if it changed: master.Registry.Refresh), off the socket loops; after a
// build that took d, the next waits min(max(interval, 2d),
// MaxSnapshotRefreshWait), so builds take at most a third of a core
// while they take less than MaxSnapshotRefreshWait/2. A build costs what
// changed since the last, not the listing (master's snapshot.go): well
// under a millisecond for one change at 1,000,000 servers, seconds for
// a build of a million (a fleet's catch-up; a restart's or a join's is
// NewMaster's, before the sockets open), which would otherwise hold the
// next build back twice as long. Such a listing's
// changes reach the answers within min(max(interval, 2d),
// MaxSnapshotRefreshWait) plus one build, those of small groups at the
// next query (master.MaxInlineGroup), and no query waits for a build.
const (
	SnapshotRefreshInterval = 50 * time.Millisecond
	MaxSnapshotRefreshWait  = 500 * time.Millisecond
)

// refreshSnapshots calls reg.Refresh until ctx ends, every interval or
// twice the last build's duration, whichever is longer, but at most
// MaxSnapshotRefreshWait apart.
func refreshSnapshots(ctx context.Context, reg *master.Registry, interval time.Duration) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			wait := interval
			if reg.Refresh(start) {
				wait = min(max(interval, 2*time.Since(start)), max(interval, MaxSnapshotRefreshWait))
			}
			t.Reset(wait)
		}
	}
}
