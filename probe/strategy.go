package probe

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// A Strategy is a named send pattern: the way a known client spreads its
// probes, as a [Prober].
type Strategy struct {
	Name  string
	About string
	Prober
}

// Send patterns of the seed (CAIA 070730A) and of qstat.
const (
	// Q4Burst and Q4Pause are the Quake 4 browser's: bursts of 32
	// back-to-back getInfo, then a pause of a few hundred milliseconds.
	Q4Burst = 32
	Q4Pause = 300 * time.Millisecond
	// Q4Window bounds what the bursts leave in flight: the Quake 4 client
	// does not wait for replies, but a bound there must be.
	Q4Window = 256
	// QstatWindow and QstatInterval are qstat's defaults: about 20
	// queries in flight, a new one every ~10 ms.
	QstatWindow   = 20
	QstatInterval = 10 * time.Millisecond
)

// Strategies are the send patterns [StrategyNamed] knows, in the order
// they are listed to users.
var Strategies = []Strategy{
	{Name: "auto", About: "paced by the link: from 200 probes/s up to what the replies show the player's line carries without queueing (see Pacer), at most 5,000/s",
		Prober: Prober{Pace: &Pace{}}},
	{Name: "et", About: "Enemy Territory: at most 16 probes in flight, a new one as each is answered",
		Prober: Prober{Window: DefaultWindow}},
	{Name: "q4", About: "Quake 4: bursts of 32 probes back to back, then a 300 ms pause",
		Prober: Prober{Window: Q4Window, Burst: Q4Burst, Pause: Q4Pause}},
	{Name: "qstat", About: "qstat-like, for comparison: 20 in flight, one every 10 ms, RTT from the first send",
		Prober: Prober{Window: QstatWindow, Interval: QstatInterval, RTTFromFirstSend: true}},
}

// StrategyNamed returns the strategy called name (case-insensitive).
func StrategyNamed(name string) (Strategy, error) {
	i := slices.IndexFunc(Strategies, func(s Strategy) bool { return strings.EqualFold(s.Name, name) })
	if i < 0 {
		names := make([]string, len(Strategies))
		for i, s := range Strategies {
			names[i] = s.Name
		}
		return Strategy{}, fmt.Errorf("probe: unknown strategy %q (known: %s)", name, strings.Join(names, ", "))
	}
	return Strategies[i], nil
}

// IntervalForRate returns the Interval that paces sends at rate per
// second; 0 (no pacing) for a rate that is not positive.
func IntervalForRate(rate float64) time.Duration {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return 0
	}
	return max(time.Duration(float64(time.Second)/rate), 1)
}

// UDPOverhead is the IPv4 and UDP header bytes of a datagram, counted
// against a player's upstream bandwidth with the payload.
const UDPOverhead = 20 + 8

// RateForBandwidth returns the probes per second that fill bitsPerSecond
// of upstream with requests of requestSize payload bytes (the seed's
// 43-byte getinfo is 71 bytes, 568 bits, on the wire).
func RateForBandwidth(bitsPerSecond float64, requestSize int) float64 {
	if !(bitsPerSecond > 0) || requestSize < 0 {
		return 0
	}
	return bitsPerSecond / 8 / float64(requestSize+UDPOverhead)
}

// RequestSize returns the payload size of the first request of d's query,
// the one every server of a list gets.
func RequestSize(d Dialect) int {
	steps := d.begin()
	if len(steps) == 0 {
		return 0
	}
	b, err := d.appendRequest(nil, &steps[0], 0x0123456789abcdef&d.tokenMask())
	if err != nil {
		return 0
	}
	return len(b)
}

// WindowForRate returns a window large enough not to hold back sends at
// rate per second when replies take up to timeout: rate x timeout, at
// least DefaultWindow and at most MaxWindow.
func WindowForRate(rate float64, timeout time.Duration) int {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	w := rate * timeout.Seconds()
	if !(w < MaxWindow) {
		return MaxWindow
	}
	return max(int(math.Ceil(w)), DefaultWindow)
}

// MaxWindow bounds the window WindowForRate computes.
const MaxWindow = 1 << 14
