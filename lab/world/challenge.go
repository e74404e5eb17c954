package world

import (
	"hash/maphash"
	"net/netip"
	"time"
)

// ChallengeLifetime is how long a challenge handed out by an emulated UT3
// or Source server stays valid: it is accepted during the epoch it was made
// in and the next one, so for 30 to 60 seconds. Source servers accept theirs
// for about that long.
const ChallengeLifetime = 30 * time.Second

// challenger makes and checks challenges without storing them: a keyed hash
// of (server, source address, epoch), the key drawn at random when the
// emulator starts (maphash.MakeSeed), as tailscale's udprelay and ioquake3's
// SV_CreateChallenge do.
type challenger struct {
	seed maphash.Seed
}

type challengeInput struct {
	server int
	from   netip.AddrPort
	epoch  int64
}

func epochOf(now time.Time) int64 { return now.UnixNano() / int64(ChallengeLifetime) }

func (c challenger) at(server int, from netip.AddrPort, epoch int64) uint32 {
	v := uint32(maphash.Comparable(c.seed, challengeInput{server, from, epoch}))
	// 0 means "no challenge" to qstat and gamedig, 0xFFFFFFFF asks for one
	// in A2S_PLAYER, and a Quake III challenge is printed as a positive
	// int: keep clear of all three.
	v &= 0x7FFFFFFF
	if v == 0 {
		v = 1
	}
	return v
}

// make returns the challenge for a query from from, now.
func (c challenger) make(now time.Time, server int, from netip.AddrPort) uint32 {
	return c.at(server, from, epochOf(now))
}

// valid reports whether v is a challenge made for from during this epoch
// or the previous one.
func (c challenger) valid(now time.Time, server int, from netip.AddrPort, v uint32) bool {
	e := epochOf(now)
	return v == c.at(server, from, e) || v == c.at(server, from, e-1)
}
