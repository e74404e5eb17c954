//go:build linux

package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/scout-discovery/scout/protocol/q3"
)

// serve4 answers the getinfos arriving at IPv4 socket k, a batch at a
// time, from the address each was sent to.
func (s *Swarm) serve4(k int) {
	pc := s.pcs[k]
	in := make([]ipv4.Message, swarmBatch)
	for j := range in {
		in[j].Buffers = [][]byte{make([]byte, 2048)}
		in[j].OOB = ipv4.NewControlMessage(ipv4.FlagDst)
	}
	out := make([]ipv4.Message, swarmBatch)
	bufs := make([][]byte, swarmBatch)
	var cm ipv4.ControlMessage
	for {
		n, err := pc.ReadBatch(in, 0)
		if err != nil {
			// Closed, or the deadline Serve and Close set: the end. No
			// other error is expected of an unconnected UDP socket.
			return
		}
		no := 0
		for j := range in[:n] {
			m := &in[j]
			if cm.Parse(m.OOB[:m.NN]) != nil || cm.Dst == nil {
				s.other.Add(1)
				continue
			}
			dst, _ := netip.AddrFromSlice(cm.Dst.To4())
			i, ok := s.index4(dst)
			if !ok || i%len(s.pcs) != k {
				s.other.Add(1)
				continue
			}
			bufs[no] = s.reply(i, m.Buffers[0][:m.N], bufs[no][:0])
			if len(bufs[no]) == 0 {
				continue
			}
			out[no] = ipv4.Message{Buffers: [][]byte{bufs[no]}, OOB: (&ipv4.ControlMessage{Src: cm.Dst}).Marshal(), Addr: m.Addr}
			no++
		}
		s.writeBatch(pc, out[:no])
	}
}

// writeBatch sends msgs with sendmmsg, counting those the kernel refuses.
func (s *Swarm) writeBatch(pc *ipv4.PacketConn, msgs []ipv4.Message) {
	for len(msgs) > 0 {
		n, err := pc.WriteBatch(msgs, 0)
		if err != nil {
			s.sendErrs.Add(1)
			n++ // skip the refused one
		}
		msgs = msgs[min(n, len(msgs)):]
	}
}

// serve6 answers the IPv6 servers' sockets until ctx ends or Close.
func (s *Swarm) serve6(ctx context.Context) {
	events := make([]unix.EpollEvent, 256)
	var ready []int
	b := newBatch(16, 2048)
	var out []byte
	for ctx.Err() == nil && !s.closing.Load() {
		var err error
		if ready, err = s.set6.wait(events, ready, 50); err != nil {
			return
		}
		for _, k := range ready {
			for {
				n, err := s.set6.recv(k, b)
				if err != nil || n == 0 {
					break
				}
				for j := range n {
					p, from := b.datagram(j)
					out = s.reply(s.cfg.Servers+k, p, out[:0])
					if len(out) > 0 && s.set6.send(k, out, from) != nil {
						s.sendErrs.Add(1)
					}
				}
			}
		}
	}
}

// Heartbeat sends one heartbeat from every server that has not answered a
// getinfo yet, the IPv4 ones to master4 and the IPv6 ones to master6, rate
// per second in all (0 means DefaultSwarmRate), spread so that every
// socket's share ends at once. It returns when all are sent or ctx ends.
func (s *Swarm) Heartbeat(ctx context.Context, master4, master6 netip.AddrPort, rate int) error {
	if rate <= 0 {
		rate = DefaultSwarmRate
	}
	hbs := map[string][]byte{}
	for _, tag := range []string{"QuakeArena-1", "DarkPlaces"} {
		hbs[tag], _ = q3.Heartbeat{Tag: tag}.AppendBinary(nil)
	}
	hb := func(i int) []byte { _, _, tag := SwarmGame(i); return hbs[tag] }
	// Each sender's servers: socket k's IPv4 ones, then the IPv6 ones.
	lists := make([][]int, len(s.pcs)+1)
	total := 0
	for i := range s.answered {
		if s.answered[i].Load() {
			continue
		}
		g := len(s.pcs)
		if i < s.cfg.Servers {
			g = i % len(s.pcs)
		}
		lists[g] = append(lists[g], i)
		total++
	}
	if total == 0 {
		return nil
	}
	if len(lists[len(s.pcs)]) > 0 && !master6.IsValid() {
		return fmt.Errorf("loadgen: swarm: %d IPv6 servers and no IPv6 master", len(lists[len(s.pcs)]))
	}
	to4 := net.UDPAddrFromAddrPort(master4)
	errs := make(chan error, len(lists))
	for g, list := range lists {
		if len(list) == 0 {
			errs <- nil
			continue
		}
		share := float64(rate) * float64(len(list)) / float64(total)
		go func() {
			errs <- pace(ctx, len(list), share, time.Millisecond, func(from, to int) {
				if g == len(s.pcs) {
					for _, i := range list[from:to] {
						if s.set6.send(i-s.cfg.Servers, hb(i), master6) != nil {
							s.sendErrs.Add(1)
							continue
						}
						s.heartbeats.Add(1)
					}
					return
				}
				var msgs [swarmBatch]ipv4.Message
				for from < to {
					n := min(to-from, swarmBatch)
					for j, i := range list[from : from+n] {
						a := s.addr4(i).As4()
						msgs[j] = ipv4.Message{Buffers: [][]byte{hb(i)}, OOB: (&ipv4.ControlMessage{Src: net.IP(a[:])}).Marshal(), Addr: to4}
					}
					s.writeBatch(s.pcs[g], msgs[:n])
					s.heartbeats.Add(uint64(n))
					from += n
				}
			})
		}()
	}
	var first error
	for range lists {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// pace calls send for [0, n) in order, rate items per second, sending
// what is due every tick (so the rate holds without a timer per item),
// and returns when all are sent or ctx ends.
func pace(ctx context.Context, n int, rate float64, tick time.Duration, send func(from, to int)) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	sent := 0
	for sent < n {
		due := min(n, int(time.Since(start).Seconds()*rate)+1)
		if due > sent {
			send(sent, due)
			sent = due
		}
		if sent == n {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// RegisterConfig bounds Register.
type RegisterConfig struct {
	Rate     int           // heartbeats per second; default DefaultSwarmRate
	Deadline time.Duration // default 10 minutes
	// Idle ends a round: once every heartbeat is sent, the round ends
	// when Idle passes without a new server answering; default 1 s.
	Idle time.Duration
}

// RegisterResult is what Register saw.
type RegisterResult struct {
	Answered int           // servers that answered the master's getinfo
	Rounds   []Round       // the first, then resends to those not answered
	Elapsed  time.Duration // first heartbeat to the last server's first answer
}

// Round is one round of heartbeats.
type Round struct {
	Sent     int           // heartbeats
	Answered int           // servers that answered a getinfo for the first time during it
	Elapsed  time.Duration // its first heartbeat to its last new answer (or its last heartbeat)
}

// Register heartbeats every server to the master (IPv4 to master4, IPv6
// to master6), then, round after round, those that the master has not
// challenged yet (their heartbeat or its getinfo lost), until every
// server has answered a getinfo or the deadline passes. Serve must be
// running.
func (s *Swarm) Register(ctx context.Context, master4, master6 netip.AddrPort, cfg RegisterConfig) (RegisterResult, error) {
	if cfg.Deadline <= 0 {
		cfg.Deadline = 10 * time.Minute
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	var r RegisterResult
	start := time.Now()
	result := func() RegisterResult {
		r.Answered = int(s.count.Load())
		if last := s.lastAnswer.Load(); last > 0 {
			r.Elapsed = time.Unix(0, last).Sub(start)
		}
		return r
	}
	for int(s.count.Load()) < s.Len() {
		began, hb0, n0 := time.Now(), s.heartbeats.Load(), s.count.Load()
		end := func() {
			rd := Round{Sent: int(s.heartbeats.Load() - hb0), Answered: int(s.count.Load() - n0), Elapsed: time.Since(began)}
			if last := time.Unix(0, s.lastAnswer.Load()); last.After(began) {
				rd.Elapsed = last.Sub(began)
			}
			r.Rounds = append(r.Rounds, rd)
		}
		if err := s.Heartbeat(ctx, master4, master6, cfg.Rate); err != nil {
			end()
			return result(), err
		}
		// Wait for the round's answers: until Idle without progress.
		last := s.count.Load()
		t := time.NewTicker(cfg.Idle / 10)
		idleSince := time.Now()
		for int(last) < s.Len() && time.Since(idleSince) < cfg.Idle {
			select {
			case <-ctx.Done():
				t.Stop()
				end()
				return result(), ctx.Err()
			case <-t.C:
			}
			if n := s.count.Load(); n != last {
				last, idleSince = n, time.Now()
			}
		}
		t.Stop()
		end()
	}
	return result(), nil
}
