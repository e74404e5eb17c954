package master

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"
)

// Challenges.
//
// A challenge is HMAC-SHA256(secret[epoch], epoch || address || port),
// truncated. The epoch is now divided by the rotation period; each epoch
// has its own 32-byte secret from crypto/rand, and only the current and the
// previous epoch's secrets are kept, so a challenge verifies for between one
// and two periods and never after. The Registry enforces the exact lifetime
// (Config.ChallengeLifetime) from the time it sent the challenge.
//
// Text form (Quake III family, "getinfo <challenge>"): ChallengeLen
// characters of the base64url alphabet [A-Za-z0-9_-]: one character for the
// epoch modulo 64, then the MAC. It carries none of the characters a Quake
// III engine would mangle or refuse (backslash, quote, semicolon, slash,
// percent, space, control bytes) and is far below the 128 bytes ioquake3's
// SVC_Info and SVC_Status echo back (longer challenges are dropped there).
//
// Int32 form (Doom 3 / Quake 4 "getInfo"): the low bit is the epoch's
// parity, the other 31 bits are the MAC.

// ChallengeLen is the length of a text challenge: 1 epoch character and 15
// MAC characters (90 bits).
const ChallengeLen = 16

// DefaultRotationPeriod is how often the challenge secret rotates.
const DefaultRotationPeriod = time.Minute

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// Challenge is one challenge in both wire forms.
type Challenge struct {
	Text  string // for Quake III family getinfo / getstatus
	Int32 int32  // for Doom 3 / Quake 4 getInfo
}

// Challenger issues and checks challenges.
//
// mu guards the fields below it; methods are safe for concurrent use.
type Challenger struct {
	period time.Duration
	rand   io.Reader

	mu      sync.Mutex
	epoch   int64
	started bool
	cur     [32]byte
	prev    [32]byte
	hasPrev bool
}

// NewChallenger returns a Challenger rotating its secret every period,
// drawing secrets from rand (crypto/rand.Reader in production).
func NewChallenger(period time.Duration, rand io.Reader) (*Challenger, error) {
	if period <= 0 {
		return nil, fmt.Errorf("master: challenge rotation period %v must be positive", period)
	}
	return &Challenger{period: period, rand: rand}, nil
}

// Period returns the rotation period.
func (c *Challenger) Period() time.Duration { return c.period }

func (c *Challenger) epochOf(now time.Time) int64 {
	return now.UnixNano() / int64(c.period)
}

// secretsLocked rotates to now's epoch if needed and returns the secret
// for epoch e, if it is still kept.
func (c *Challenger) secretLocked(now time.Time, e int64) ([32]byte, bool) {
	ne := c.epochOf(now)
	if !c.started || ne > c.epoch {
		var fresh [32]byte
		if _, err := io.ReadFull(c.rand, fresh[:]); err != nil {
			panic(fmt.Sprintf("master: reading challenge secret: %v", err))
		}
		c.hasPrev = c.started && ne == c.epoch+1
		c.prev = c.cur
		c.cur = fresh
		c.epoch = ne
		c.started = true
	}
	switch e {
	case c.epoch:
		return c.cur, true
	case c.epoch - 1:
		return c.prev, c.hasPrev
	}
	return [32]byte{}, false
}

// mac is HMAC-SHA256(secret, epoch || address || port), computed as
// RFC 2104 defines it (the 32-byte key zero-padded to SHA-256's 64-byte
// block, inner and outer pads) on arrays on the stack: crypto/hmac.New
// allocates two hash states per call, about 900 bytes for every challenge
// issued or checked, which was most of what registering a server left for
// the garbage collector. TestMAC_IsHMAC checks it against crypto/hmac.
func mac(secret [32]byte, e int64, a netip.AddrPort) [sha256.Size]byte {
	const block = 64
	var inner [block + 8 + 16 + 2]byte
	var outer [block + sha256.Size]byte
	for i := range block {
		k := byte(0)
		if i < len(secret) {
			k = secret[i]
		}
		inner[i] = k ^ 0x36
		outer[i] = k ^ 0x5c
	}
	msg := inner[block:]
	binary.BigEndian.PutUint64(msg[:8], uint64(e))
	a16 := a.Addr().As16()
	copy(msg[8:24], a16[:])
	binary.BigEndian.PutUint16(msg[24:], a.Port())
	in := sha256.Sum256(inner[:])
	copy(outer[block:], in[:])
	return sha256.Sum256(outer[:])
}

func encodeText(e int64, m [sha256.Size]byte) string {
	var buf [ChallengeLen]byte
	buf[0] = b64[uint64(e)%64]
	var enc [44]byte
	base64.RawURLEncoding.Encode(enc[:], m[:])
	copy(buf[1:], enc[:ChallengeLen-1])
	return string(buf[:])
}

func encode32(e int64, m [sha256.Size]byte) int32 {
	return int32(binary.BigEndian.Uint32(m[:4])&^1 | uint32(e)&1)
}

// Issue returns the challenge for address a at time now.
func (c *Challenger) Issue(now time.Time, a netip.AddrPort) Challenge {
	c.mu.Lock()
	e := c.epochOf(now)
	s, _ := c.secretLocked(now, e)
	c.mu.Unlock()
	m := mac(s, e, a)
	return Challenge{Text: encodeText(e, m), Int32: encode32(e, m)}
}

// Check verifies a text challenge from a at now: OK, ReasonBadChallenge
// (not issued to a), or ReasonChallengeExpired (issued more than one epoch
// ago).
func (c *Challenger) Check(now time.Time, a netip.AddrPort, text string) Reason {
	if text == "" {
		return ReasonMissingChallenge
	}
	if len(text) != ChallengeLen {
		return ReasonBadChallenge
	}
	c.mu.Lock()
	ne := c.epochOf(now)
	var e int64 = -1
	for _, cand := range []int64{ne, ne - 1} {
		if b64[uint64(cand)%64] == text[0] {
			e = cand
			break
		}
	}
	if e < 0 {
		c.mu.Unlock()
		if indexB64(text[0]) < 0 {
			return ReasonBadChallenge
		}
		return ReasonChallengeExpired
	}
	s, ok := c.secretLocked(now, e)
	c.mu.Unlock()
	if !ok {
		return ReasonChallengeExpired
	}
	want := encodeText(e, mac(s, e, a))
	if !hmac.Equal([]byte(want), []byte(text)) {
		return ReasonBadChallenge
	}
	return OK
}

// Check32 verifies an int32 challenge from a at now, as Check.
func (c *Challenger) Check32(now time.Time, a netip.AddrPort, v int32) Reason {
	c.mu.Lock()
	ne := c.epochOf(now)
	e := ne
	if uint32(v)&1 != uint32(ne)&1 {
		e = ne - 1
	}
	s, ok := c.secretLocked(now, e)
	c.mu.Unlock()
	if !ok {
		return ReasonChallengeExpired
	}
	if encode32(e, mac(s, e, a)) != v {
		return ReasonBadChallenge
	}
	return OK
}

func indexB64(b byte) int {
	for i := 0; i < len(b64); i++ {
		if b64[i] == b {
			return i
		}
	}
	return -1
}
