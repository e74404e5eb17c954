package master

import (
	"time"

	"github.com/scout-discovery/scout/game"
)

// Round-trip times (the master as a landmark).
//
// The registry measures its round trip to every server it checks: from
// the instant a check's try was handed out (Registry.Heartbeat,
// Flatline, DueProbes take now when the socket loop is about to send it)
// to the instant the reply that verifies it arrives (Verify's now). A
// reply whose challenge more than one try of its check carried (retries
// in the same challenge epoch carry the same challenge) is ambiguous and
// gives no sample: a late answer to the first try must not pass for a
// quick answer to the retry. The entry keeps the last RTTSamples samples
// in a ring of uint16 (RTTUnit each) and the instant of the last one:
// 16 bytes per server, no slice. Server.RTT is their median.
const (
	// RTTSamples is how many of a server's last RTT samples are kept;
	// Server.RTT is their median.
	RTTSamples = 3
	// RTTUnit is the resolution of a kept sample.
	RTTUnit = 100 * time.Microsecond
	// MaxRTT is the largest sample kept (65535 units, 6.5535 s, above
	// DefaultChallengeLifetime); a longer round trip is not recorded.
	MaxRTT = 65535 * RTTUnit
)

// rttRing is an entry's last RTT samples.
type rttRing struct {
	at   stamp // when the last sample was taken; 0 if none
	s    [RTTSamples]uint16
	n    uint8 // samples held, at most RTTSamples
	next uint8 // where the next sample goes
}

// add records a sample d taken at now. Samples outside (0, MaxRTT] are
// ignored.
func (r *rttRing) add(now time.Time, d time.Duration) {
	if d <= 0 || d > MaxRTT {
		return
	}
	u := (d + RTTUnit/2) / RTTUnit
	if u < 1 {
		u = 1
	}
	if u > 65535 {
		u = 65535
	}
	r.s[r.next] = uint16(u)
	r.next = (r.next + 1) % RTTSamples
	if r.n < RTTSamples {
		r.n++
	}
	r.at = stampOf(now)
}

// median returns the median of the samples held (the mean of the middle
// two for an even count), 0 if none.
func (r *rttRing) median() time.Duration {
	if r.n == 0 {
		return 0
	}
	var v [RTTSamples]uint16
	copy(v[:], r.s[:r.n])
	w := v[:r.n]
	for i := 1; i < len(w); i++ { // insertion sort: at most RTTSamples
		for j := i; j > 0 && w[j] < w[j-1]; j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
	m := len(w) / 2
	if len(w)%2 == 1 {
		return time.Duration(w[m]) * RTTUnit
	}
	return (time.Duration(w[m-1]) + time.Duration(w[m])) * RTTUnit / 2
}

// rttSample returns the round trip the reply rep at now measures for the
// check c: from the one try whose challenge it carries to now. ok is false
// when no try or more than one try carried that challenge.
func (c *check) rttSample(family game.Family, rep *Reply, now time.Time) (time.Duration, bool) {
	text, _ := rep.get("challenge")
	found := -1
	for i, ch := range c.chals[:c.tries] {
		if family == game.FamilyDoom3 && ch.Int32 == rep.Challenge32 ||
			family != game.FamilyDoom3 && ch.Text == text {
			if found >= 0 {
				return 0, false
			}
			found = i
		}
	}
	if found < 0 || c.tryAt[found] == 0 {
		return 0, false
	}
	d := now.Sub(c.tryAt[found].Time())
	return d, d > 0
}
