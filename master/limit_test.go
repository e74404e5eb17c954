package master

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"
)

// dpmaster's manual: throttle 5, decay 3 s: 4 requests in a row are
// answered, the 5th is ignored, then one more every 3 s.
func TestSourceLimiter_FloodProtection(t *testing.T) {
	l, err := NewSourceLimiter(5, 3*time.Second, 10)
	if err != nil {
		t.Fatal(err)
	}
	src := ap("198.51.100.7:5000")
	for i, want := range []Reason{OK, OK, OK, OK, ReasonRateLimited, ReasonRateLimited} {
		if got := l.Allow(t0, src); got != want {
			t.Errorf("request %d: %v, want %v", i+1, got, want)
		}
	}
	// Refill boundary at +-1ns: the first decay completes at t0+3s.
	if got := l.Allow(t0.Add(3*time.Second-time.Nanosecond), src); got != ReasonRateLimited {
		t.Errorf("1ns before decay: %v", got)
	}
	if got := l.Allow(t0.Add(3*time.Second), src); got != OK {
		t.Errorf("at decay: %v", got)
	}
	if got := l.Allow(t0.Add(3*time.Second), src); got != ReasonRateLimited {
		t.Errorf("second at decay: %v", got)
	}
	// Another port of the same address is the same source; another /64 is not.
	if got := l.Allow(t0.Add(3*time.Second), ap("198.51.100.7:5001")); got != ReasonRateLimited {
		t.Errorf("other port: %v", got)
	}
	if got := l.Allow(t0, ap("198.51.100.8:5000")); got != OK {
		t.Errorf("other address: %v", got)
	}
}

func TestSourceLimiter_IPv6SharesSlash64(t *testing.T) {
	l, _ := NewSourceLimiter(2, time.Second, 10)
	if l.Allow(t0, ap("[2001:db8:0:1::1]:1")) != OK {
		t.Fatal("first")
	}
	if got := l.Allow(t0, ap("[2001:db8:0:1::2]:1")); got != ReasonRateLimited {
		t.Errorf("same /64: %v", got)
	}
	if got := l.Allow(t0, ap("[2001:db8:0:2::1]:1")); got != OK {
		t.Errorf("other /64: %v", got)
	}
}

func TestSourceLimiter_TableBoundedWithEviction(t *testing.T) {
	l, _ := NewSourceLimiter(5, 3*time.Second, 4)
	for i := range 4 {
		if l.Allow(t0, ap(fmt.Sprintf("198.51.100.%d:1", i+1))) != OK {
			t.Fatal(i)
		}
	}
	if got := l.Allow(t0, ap("198.51.100.99:1")); got != ReasonSourceTableFull {
		t.Errorf("full table: %v", got)
	}
	// One request each decays after 3 s: entries become evictable.
	if got := l.Allow(t0.Add(3*time.Second-time.Nanosecond), ap("198.51.100.99:1")); got != ReasonSourceTableFull {
		t.Errorf("1ns early: %v", got)
	}
	if got := l.Allow(t0.Add(3*time.Second), ap("198.51.100.99:1")); got != OK {
		t.Errorf("after decay: %v", got)
	}
	if l.Len() > 4 {
		t.Errorf("table grew to %d", l.Len())
	}
}

func TestSourceLimiter_BadConfig(t *testing.T) {
	for _, c := range []struct {
		th int
		d  time.Duration
		m  int
	}{{1, time.Second, 1}, {5, 0, 1}, {5, time.Second, 0}} {
		if _, err := NewSourceLimiter(c.th, c.d, c.m); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestByteBudget(t *testing.T) {
	b, err := NewByteBudget(1000, 2000) // 1 ms per byte
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Reserve(t0, 2001); got != ReasonReplyTooLarge {
		t.Errorf("oversize: %v", got)
	}
	if got := b.Reserve(t0, 2000); got != OK {
		t.Errorf("full burst: %v", got)
	}
	if got := b.Reserve(t0, 1); got != ReasonBudgetExhausted {
		t.Errorf("empty bucket: %v", got)
	}
	// 500 bytes refill in 500 ms exactly.
	if got := b.Reserve(t0.Add(500*time.Millisecond-time.Nanosecond), 500); got != ReasonBudgetExhausted {
		t.Errorf("1ns early: %v", got)
	}
	if got := b.Reserve(t0.Add(500*time.Millisecond), 500); got != OK {
		t.Errorf("on time: %v", got)
	}
	// Idle time does not accumulate beyond the burst.
	if got := b.Reserve(t0.Add(time.Hour), 2000); got != OK {
		t.Errorf("after idle: %v", got)
	}
	if got := b.Reserve(t0.Add(time.Hour), 1); got != ReasonBudgetExhausted {
		t.Errorf("burst exceeded after idle: %v", got)
	}
}

func TestChallenger_Alphabet(t *testing.T) {
	c, _ := NewChallenger(time.Minute, &countRand{})
	for i := range 1000 {
		ch := c.Issue(t0.Add(time.Duration(i)*time.Second), ap(fmt.Sprintf("198.51.100.%d:27960", i%250+1)))
		if len(ch.Text) != ChallengeLen || len(ch.Text) > 128 {
			t.Fatalf("length %d", len(ch.Text))
		}
		if strings.ContainsAny(ch.Text, "\\/;\"% \x00\n") {
			t.Fatalf("bad character in %q", ch.Text)
		}
	}
}

func TestChallenger_Epochs(t *testing.T) {
	const p = time.Minute
	a := ap("198.51.100.7:27960")
	start := t0.Truncate(p) // an epoch boundary
	for _, c := range []struct {
		name   string
		issue  time.Duration
		check  time.Duration
		want   Reason
		want32 Reason
	}{
		{"same epoch", 0, p - time.Nanosecond, OK, OK},
		{"next epoch", 0, 2*p - time.Nanosecond, OK, OK},
		{"two epochs later", 0, 2 * p, ReasonChallengeExpired, ReasonChallengeExpired},
		{"issued at the end", p - time.Nanosecond, 2*p - time.Nanosecond, OK, OK},
		{"issued at the end, expired", p - time.Nanosecond, 2 * p, ReasonChallengeExpired, ReasonChallengeExpired},
	} {
		ch, _ := NewChallenger(p, &countRand{})
		x := ch.Issue(start.Add(c.issue), a)
		if got := ch.Check(start.Add(c.check), a, x.Text); got != c.want {
			t.Errorf("%s: text %v, want %v", c.name, got, c.want)
		}
		ch2, _ := NewChallenger(p, &countRand{})
		y := ch2.Issue(start.Add(c.issue), a)
		got := ch2.Check32(start.Add(c.check), a, y.Int32)
		if c.want32 == ReasonChallengeExpired && got == ReasonBadChallenge {
			got = ReasonChallengeExpired // a 1-bit epoch cannot tell old from forged
		}
		if got != c.want32 {
			t.Errorf("%s: int32 %v, want %v", c.name, got, c.want32)
		}
	}
}

func TestChallenger_BoundToAddress(t *testing.T) {
	c, _ := NewChallenger(time.Minute, &countRand{})
	a, b := ap("198.51.100.7:27960"), ap("198.51.100.7:27961")
	x := c.Issue(t0, a)
	if got := c.Check(t0, b, x.Text); got != ReasonBadChallenge {
		t.Errorf("other port: %v", got)
	}
	if got := c.Check32(t0, b, x.Int32); got != ReasonBadChallenge {
		t.Errorf("other port int32: %v", got)
	}
	for _, bad := range []string{"", "short", x.Text[:ChallengeLen-1] + "\\", x.Text + "x", "!" + x.Text[1:]} {
		if got := c.Check(t0, a, bad); got == OK {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAddrMap(t *testing.T) {
	m1, _ := ParseMapping("192.168.1.10=203.0.113.1")
	m2, _ := ParseMapping("192.168.1.10:27961=203.0.113.1:30000")
	m3, _ := ParseMapping("10.0.0.1:27960=203.0.113.2")
	m, err := NewAddrMap(m1, m2, m3)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"192.168.1.10:27960": "203.0.113.1:27960",
		"192.168.1.10:27961": "203.0.113.1:30000",
		"10.0.0.1:27960":     "203.0.113.2:27960",
		"10.0.0.1:27961":     "10.0.0.1:27961",
	} {
		if got, _ := m.Map(ap(in)); got != ap(want) {
			t.Errorf("Map(%s) = %v, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"1.2.3.4=127.0.0.1", "0.0.0.0=1.2.3.4", "1.2.3.4=::2"} {
		mm, err := ParseMapping(bad)
		if err == nil {
			_, err = NewAddrMap(mm)
		}
		if err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewAddrMap(m1, m1); err == nil {
		t.Error("duplicate accepted")
	}
}

// mac is HMAC-SHA256 as crypto/hmac computes it.
func TestMAC_IsHMAC(t *testing.T) {
	for i, a := range []string{"192.0.2.1:27960", "[2001:db8::1]:1", "0.0.0.0:0"} {
		var secret [32]byte
		for j := range secret {
			secret[j] = byte(i*37 + j*11)
		}
		e := int64(i*1_000_003 - 1)
		h := hmac.New(sha256.New, secret[:])
		var msg [26]byte
		binary.BigEndian.PutUint64(msg[:8], uint64(e))
		a16 := ap(a).Addr().As16()
		copy(msg[8:24], a16[:])
		binary.BigEndian.PutUint16(msg[24:], ap(a).Port())
		h.Write(msg[:])
		if got, want := mac(secret, e, ap(a)), h.Sum(nil); !bytes.Equal(got[:], want) {
			t.Errorf("%s: mac %x, HMAC %x", a, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { mac([32]byte{}, 1, ap("192.0.2.1:1")) }); n != 0 {
		t.Errorf("mac allocates %v times", n)
	}
}
