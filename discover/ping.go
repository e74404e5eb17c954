package discover

import (
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Pings to landmark masters. The client's RTT to a master is
// one sample with the list alone (MasterReport.RTT: the query to the
// first packet of the reply), and a master that is building a list, a
// queue on the path or a busy client can each add to one sample. With
// Config.LandmarkPings, once a landmark master's list has ended (a
// getserversExt master that sent a landmark run), the session sends it
// that many pings, one at a time, and keeps their round trips
// (MasterReport.Pings); MasterReport.BestRTT is the least of all the
// samples, the list's included. Every delay adds to a sample and none
// takes away, so the least of a few is the nearest to the path's own RTT
// (one inflated sample, or all but one, leave it as it is).
//
// A ping is q3.LandmarkPing, a list query for protocol 0, which no game
// uses: every master answers it with the empty list, one packet. The
// reply is a getserversResponse with no entries (q3.IsLandmarkPong),
// which a run that asks with getserversExt (as landmark runs do) cannot
// take for its list. A ping
// waits for its reply at most twice the best sample so far plus
// PingSlack (and never longer than Config.Timeout): a later reply could
// not lower the least. A ping that times out ends that master's pings,
// so that its late reply is never taken for the next one's; the master's
// MasterDone comes after its pings.

// MaxLandmarkPings bounds Config.LandmarkPings; DefaultLandmarkPings is
// what scout servers --order landmarks and the demo send: two, so that
// with a list asked in one form a client sends 3 queries in a row to a
// master that counts them (dpmaster's flood protection, -f: 4 in a row,
// then one every 3 s), leaving one for a run right after. Scout's master
// by default limits the bytes of replies per client instead (a ping's
// reply is 29 bytes).
const (
	MaxLandmarkPings     = 8
	DefaultLandmarkPings = 2
)

// PingSlack is added to twice the best sample for a ping's wait.
const PingSlack = 50 * time.Millisecond

// pingQuery is a ping's datagram (q3.LandmarkPing).
var pingQuery = q3.LandmarkPing()

// BestRTT returns the client's RTT to the master: the least of RTT and
// Pings, 0 if there is none.
func (r MasterReport) BestRTT() time.Duration {
	best := r.RTT
	for _, p := range r.Pings {
		if p > 0 && (best <= 0 || p < best) {
			best = p
		}
	}
	return best
}

// pings returns how many pings the run sends each landmark master.
func (c *Config) pings() int { return max(0, min(c.LandmarkPings, MaxLandmarkPings)) }

// wantsPings reports whether m's list, just ended, is followed by pings.
func (s *session) wantsPings(m *collecting) bool {
	return s.cfg.Landmarks && s.cfg.pings() > 0 && m.Protocol == ProtocolQ3 && m.Q3.Ext &&
		m.rep.Landmark != "" && m.rep.Packets > 0
}

// listEnded ends m's list at now, how: at once, or after its pings.
func (s *session) listEnded(now time.Time, m *collecting, end string) []outgoing {
	if !s.wantsPings(m) {
		s.finish(now, m, end, nil)
		return nil
	}
	m.pinging, m.pingEnd, m.listEndAt = true, end, now
	return []outgoing{s.ping(now, m)}
}

// ping returns m's next ping.
func (s *session) ping(now time.Time, m *collecting) outgoing {
	m.pingAt = now
	m.rep.PingsSent++
	return outgoing{b: pingQuery, to: m.Addr, m: m, ping: true}
}

// pingWait is how long m's ping in flight waits for its reply.
func (s *session) pingWait(m *collecting) time.Duration {
	return min(2*m.rep.BestRTT()+PingSlack, s.cfg.timeout())
}

// pingsDone ends m's pings at now, and with them its list as it ended.
func (s *session) pingsDone(now time.Time, m *collecting) {
	m.pinging, m.pingAt = false, time.Time{}
	s.finish(now, m, m.pingEnd, nil)
}

// receivePing handles b from m if it is a ping's reply, and reports
// whether it was; it may return the next ping.
func (s *session) receivePing(now time.Time, m *collecting, b []byte) ([]outgoing, bool) {
	if m.rep.PingsSent == 0 || !q3.IsLandmarkPong(b) {
		return nil, false
	}
	if !m.pinging || m.pingAt.IsZero() {
		return nil, true // its ping timed out, or a duplicate: not a sample
	}
	m.rep.Pings = append(m.rep.Pings, now.Sub(m.pingAt))
	m.pingAt = time.Time{}
	if m.rep.PingsSent < s.cfg.pings() {
		return []outgoing{s.ping(now, m)}, true
	}
	s.pingsDone(now, m)
	return nil, true
}
