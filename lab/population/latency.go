package population

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/scout-discovery/scout/latency"
)

// Place is where a client sits.
type Place struct {
	Name string // the key of Places, e.g. "AU"
	City latency.City
	// Access is the client's constant access delay, added to every RTT.
	Access time.Duration
}

// Places returns the client places of the paper's Table 1, at the nearest
// WonderProxy city: AU (Melbourne; the paper's real clients sat behind a
// consumer ADSL line, modelled as 20 ms of access delay), JP (Tokyo), CH
// (Zurich) and DE (Frankfurt; the paper's was in Berlin); the last three
// were PlanetLab nodes on university networks, modelled as 1 ms.
func Places() map[string]Place {
	out := map[string]Place{}
	for _, p := range []struct {
		key, city string
		access    time.Duration
	}{
		{"AU", "Melbourne", 20 * time.Millisecond},
		{"JP", "Tokyo", time.Millisecond},
		{"CH", "Zurich", time.Millisecond},
		{"DE", "Frankfurt", time.Millisecond},
	} {
		for _, c := range latency.Cities() {
			if c.Name == p.city {
				out[p.key] = Place{Name: p.key, City: c, Access: p.access}
			}
		}
	}
	return out
}

// Latency is the latency model between places and servers.
type Latency struct {
	// ASOffset and Slash16Offset are the means of the exponential delays
	// added per (client, AS) and per (client, /16): the part of a path the
	// city-to-city matrix does not see (the server's own network). Zero
	// means none.
	ASOffset      time.Duration
	Slash16Offset time.Duration
	// Residual scales the fitted spread of the city-to-city residual; 1 is
	// the fitted value, 0 no residual.
	Residual float64
	// Vantage draws the residual from the client city's own fit to the
	// server's region (vantageResidual) where there is one; false draws
	// every client's from the fit over all city pairs, N(fitResidualMedian,
	// fitSigma).
	Vantage bool
}

// DefaultLatency returns the model's defaults: 10 ms per AS and 5 ms per
// /16 (assumptions: WonderProxy measures datacentre to datacentre; see
// EVALUATION.md), and the fitted residual of all city pairs.
func DefaultLatency() Latency {
	return Latency{ASOffset: 10 * time.Millisecond, Slash16Offset: 5 * time.Millisecond, Residual: 1}
}

// VantageLatency is DefaultLatency with each client's residual drawn from
// its own city's fit per region (Vantage; see calibrated.go).
func VantageLatency() Latency {
	l := DefaultLatency()
	l.Vantage = true
	return l
}

// hashRand returns a random source that depends only on its keys.
func hashRand(seed uint64, keys ...string) *rand.Rand {
	h := fnv.New64a()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func expDur(r *rand.Rand, mean time.Duration) time.Duration {
	if mean <= 0 {
		return 0
	}
	return time.Duration(r.ExpFloat64() * float64(mean))
}

// Jitter returns one probe's extra delay over a path of base RTT: exponential
// with the mean the WonderProxy per-ping spread gives for that RTT
// (mdev = 1.1 ms + 0.5% of the RTT).
func Jitter(r *rand.Rand, base time.Duration) time.Duration {
	ms := fitJitterMs + fitJitterPerMs*float64(base)/float64(time.Millisecond)
	return time.Duration(r.ExpFloat64() * ms * float64(time.Millisecond))
}

// rtt is the base RTT from p to s, deterministic for (seed, place, server's
// city, AS and /16).
func (l Latency) rtt(seed uint64, p Place, s Server, c latency.City) time.Duration {
	base := latency.CityRTT(p.City, c)
	mu, sigma := fitResidualMedian, fitSigma
	if m, s, ok := vantageResidual(p.City.Name, latency.Region(c.Country)); ok && l.Vantage {
		mu, sigma = m, s
	}
	e := mu + l.Residual*sigma*hashRand(seed, "city", p.Name, c.Name, c.Country).NormFloat64()
	d := time.Duration(float64(base) * math.Exp(e))
	d += expDur(hashRand(seed, "as", p.Name, s.Country, itoa(uint64(s.ASN))), l.ASOffset)
	a := s.Addr.Addr().As4()
	d += expDur(hashRand(seed, "16", p.Name, itoa(uint64(a[0])<<8|uint64(a[1]))), l.Slash16Offset)
	return p.Access + d
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
