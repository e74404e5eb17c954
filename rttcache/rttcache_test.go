package rttcache

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func out(addr string, rtt float64) Outcome {
	return Outcome{Addr: netip.MustParseAddrPort(addr), RTT: ms(rtt), Answered: true}
}

var master = netip.MustParseAddrPort("192.0.2.1:27950")

// golden is what TestCache_WritesTheDocumentedFormat's memory writes.
const golden = "scout-rtt-cache 2\n" +
	"vantage 192.0.2.1:27950 31.2\n" +
	"group 198.51.100.0/24 1767225600 250.0 1\n" +
	"group 203.0.113.0/24 1767225600 41.3 2 1767229200 40.9 1\n" +
	"group 2001:db8::/64 1767229200 88.0 1\n" +
	"listed 198.51.100.0/24 1767229200\n" +
	"listed 203.0.113.0/24 1767229200\n" +
	"listed 233.252.0.0/24 1767229200\n"

func goldenCache() *Cache {
	c := New()
	v := map[netip.AddrPort]time.Duration{master: ms(31.2)}
	c.Record(t0, v, []Outcome{out("203.0.113.7:27960", 41.3), out("203.0.113.9:27960", 44), out("198.51.100.1:27960", 250), {Addr: netip.MustParseAddrPort("198.51.100.2:27960")}})
	c.Record(t0.Add(time.Hour), v, []Outcome{out("203.0.113.7:27961", 40.9), out("[2001:db8::5]:27960", 88)})
	c.SetListed(t0.Add(time.Hour), []netip.AddrPort{netip.MustParseAddrPort("203.0.113.7:27961"), netip.MustParseAddrPort("198.51.100.1:27960"), netip.MustParseAddrPort("233.252.0.9:27960")})
	return c
}

func TestCache_WritesTheDocumentedFormat(t *testing.T) {
	b := goldenCache().AppendText(nil)
	body, end, _ := bytes.Cut(b, []byte("end "))
	if string(body) != golden {
		t.Errorf("wrote\n%s\nwant\n%s", body, golden)
	}
	if len(end) != 9 {
		t.Errorf("end line %q", end)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.AppendText(nil), b) {
		t.Error("parsed and written again, the bytes differ")
	}
}

func TestCache_RecordKeepsTheLeastOfARunAndTheNewestSamples(t *testing.T) {
	c := New()
	g := adaptive.GroupKey(netip.MustParseAddr("203.0.113.1"))
	for i := range MaxSamples + 2 {
		c.Record(t0.Add(time.Duration(i)*time.Minute), nil, []Outcome{out("203.0.113.1:27960", float64(100+i)), out("203.0.113.2:27960", float64(90+i))})
	}
	s := c.Samples(g)
	if len(s) != MaxSamples || s[0].RTT != ms(92) || s[len(s)-1].RTT != ms(95) {
		t.Errorf("samples %v, want the %d newest, each the least of its run", s, MaxSamples)
	}
	p := c.Priors(t0.Add(10 * time.Minute))[g]
	if p.Least != ms(92) || p.Samples != 2*MaxSamples {
		t.Errorf("prior %+v, want the least of the kept samples and their %d answers", p, 2*MaxSamples)
	}
}

func TestCache_RecordBoundsTheAnswersOfARun(t *testing.T) {
	c := New()
	var outs []Outcome
	for i := range MaxAnswers + 5 {
		outs = append(outs, out(fmt.Sprintf("203.0.113.%d:27960", 1+i), float64(60-i)))
	}
	c.Record(t0, nil, outs)
	s := c.Samples(adaptive.GroupKey(netip.MustParseAddr("203.0.113.1")))
	if len(s) != 1 || s[0].Answers != MaxAnswers || s[0].RTT != ms(60-float64(MaxAnswers+4)) {
		t.Errorf("samples %+v, want one of %d answers at the least RTT", s, MaxAnswers)
	}
}

// An answer under 50 µs (loopback, a LAN) is kept at 0.1 ms: the file,
// which refuses an RTT of 0.0, still reads back.
func TestCache_SubMillisecondRTTReadsBack(t *testing.T) {
	c := New()
	c.Record(t0, nil, []Outcome{{Addr: netip.MustParseAddrPort("127.0.0.1:27960"), RTT: 30 * time.Microsecond, Answered: true}})
	back, err := Parse(c.AppendText(nil))
	if err != nil {
		t.Fatalf("a memory of a 30 µs answer does not read back: %v", err)
	}
	if s := back.Samples(netip.MustParsePrefix("127.0.0.0/24")); len(s) != 1 || s[0].RTT != 100*time.Microsecond {
		t.Errorf("samples %+v, want one at 0.1 ms", s)
	}
}

func TestCache_PriorsUseOnlyFreshSamples(t *testing.T) {
	c := New()
	c.Record(t0, nil, []Outcome{out("203.0.113.1:27960", 50)})
	c.Record(t0.Add(MaxAge), nil, []Outcome{out("203.0.113.1:27960", 70)})
	g := adaptive.GroupKey(netip.MustParseAddr("203.0.113.1"))
	if p := c.Priors(t0.Add(MaxAge))[g]; p.Least != ms(50) || p.Samples != 2 {
		t.Errorf("at MaxAge: %+v, want both samples", p)
	}
	if p := c.Priors(t0.Add(MaxAge + time.Second))[g]; p.Least != ms(70) || p.Samples != 1 {
		t.Errorf("past MaxAge: %+v, want the newer sample only", p)
	}
	if _, ok := c.Priors(t0.Add(-time.Second))[g]; ok {
		t.Error("a clock set back before the samples still used them")
	}
}

// Known: a group sampled or listed within MaxAge; a listed group that
// was never probed is known, not remembered with an RTT.
func TestCache_KnownIsSampledOrListed(t *testing.T) {
	c := goldenCache()
	key := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	at := t0.Add(2 * time.Hour)
	k := c.Known(at)
	for _, g := range []string{"203.0.113.0/24", "198.51.100.0/24", "2001:db8::/64", "233.252.0.0/24"} {
		if !k[key(g)] {
			t.Errorf("%s not known", g)
		}
	}
	if len(k) != 4 {
		t.Errorf("%d groups known, want 4", len(k))
	}
	if _, ok := c.Priors(at)[key("233.252.0.0/24")]; ok {
		t.Error("a group only listed has a prior RTT")
	}
	if k := c.Known(t0.Add(time.Hour + MaxAge + time.Second)); len(k) != 0 {
		t.Errorf("past MaxAge, %v still known", k)
	}
	c.Record(at, map[netip.AddrPort]time.Duration{master: ms(120)}, nil)
	if k := c.Known(at); len(k) != 0 {
		t.Errorf("after a run from elsewhere, %v still known", k)
	}
}

func TestParse_ReadsVersion1(t *testing.T) {
	c, err := Parse(file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0 2 6.0\n"))
	if err != nil || c.Len() != 1 {
		t.Fatalf("%v, %v", c, err)
	}
	if p := c.Priors(time.Unix(3, 0))[netip.MustParsePrefix("10.1.2.0/24")]; p.Least != ms(5) || p.Samples != 2 {
		t.Errorf("version 1 prior %+v, want 5 ms of 2 answers (one a sample)", p)
	}
}

func TestCache_AnotherVantageStartsAfresh(t *testing.T) {
	c := goldenCache()
	if !c.Matches(map[netip.AddrPort]time.Duration{master: ms(39)}) || !c.Matches(map[netip.AddrPort]time.Duration{master: ms(75)}) {
		t.Error("31.2 ms then 39 or 75 ms (a sample over the path's, by less than 50 ms) does not match")
	}
	if c.Matches(map[netip.AddrPort]time.Duration{master: ms(15)}) {
		t.Error("31.2 ms then 15 ms (more than 10 ms under) matches")
	}
	moved := map[netip.AddrPort]time.Duration{master: ms(120)}
	if c.Matches(moved) {
		t.Error("31.2 ms then 120 ms matches")
	}
	c.Record(t0.Add(2*time.Hour), moved, []Outcome{out("192.0.2.77:27960", 12)})
	if c.Len() != 1 {
		t.Errorf("%d groups after a run from elsewhere, want only its own", c.Len())
	}
	if !c.Matches(moved) {
		t.Error("the new vantage is not the one kept")
	}
}

// TestCache_VantageKeepsTheLeast: a run from the same place whose master
// RTT was inflated does not raise the remembered one, so the next quiet
// run still matches.
func TestCache_VantageKeepsTheLeast(t *testing.T) {
	c := goldenCache()
	c.Record(t0.Add(time.Hour), map[netip.AddrPort]time.Duration{master: ms(70)}, nil)
	if !c.Matches(map[netip.AddrPort]time.Duration{master: ms(25)}) {
		t.Error("31.2 then 70 ms remembered; 25 ms does not match")
	}
	c.Record(t0.Add(2*time.Hour), map[netip.AddrPort]time.Duration{master: ms(25)}, nil)
	if c.Len() == 0 {
		t.Error("a run at 25 ms started the memory afresh")
	}
	if c.Matches(map[netip.AddrPort]time.Duration{master: ms(12)}) {
		t.Error("25 ms remembered; 12 ms matches")
	}
}

func TestCache_BoundedGroups(t *testing.T) {
	c := New()
	var outs []Outcome
	for i := range MaxGroups + 10 {
		outs = append(outs, Outcome{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10 + byte(i>>16), byte(i >> 8), byte(i), 1}), 27960), RTT: ms(50), Answered: true})
	}
	c.Record(t0, nil, outs[:10])
	c.Record(t0.Add(time.Minute), nil, outs[10:])
	if c.Len() != MaxGroups {
		t.Fatalf("%d groups, want %d", c.Len(), MaxGroups)
	}
	if len(c.Samples(adaptive.GroupKey(outs[0].Addr.Addr()))) != 0 {
		t.Error("the groups sampled longest ago were not the ones dropped")
	}
	var listed []netip.AddrPort
	for i := range MaxGroups + 10 {
		listed = append(listed, netip.AddrPortFrom(netip.AddrFrom4([4]byte{100 + byte(i>>16), byte(i >> 8), byte(i), 1}), 27960))
	}
	c.SetListed(t0, listed[:10])
	c.SetListed(t0.Add(time.Minute), listed[10:])
	if n := len(c.Known(t0.Add(time.Minute))); n != 2*MaxGroups {
		t.Errorf("%d groups known, want %d sampled and %d listed", n, MaxGroups, MaxGroups)
	}
	if c.Known(t0.Add(time.Minute))[adaptive.GroupKey(listed[0].Addr())] {
		t.Error("the groups listed longest ago were not the ones dropped")
	}
	b := c.AppendText(nil)
	if len(b) > MaxFile {
		t.Errorf("a full memory writes %d bytes, over MaxFile", len(b))
	}
	if _, err := Parse(b); err != nil {
		t.Errorf("a full memory does not parse back: %v", err)
	}
}

// file returns golden with a valid end line.
func file(body string) []byte {
	b := []byte(body)
	return fmt.Appendf(b, "end %08x\n", crc32.ChecksumIEEE(b))
}

func TestParse_Refuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":                     nil,
		"header only":               []byte("scout-rtt-cache 1\n"),
		"another version":           file("scout-rtt-cache 3\n"),
		"v2 sample without answers": file("scout-rtt-cache 2\ngroup 10.1.2.0/24 1 5.0\n"),
		"answers zero":              file("scout-rtt-cache 2\ngroup 10.1.2.0/24 1 5.0 0\n"),
		"answers past the bound":    file("scout-rtt-cache 2\ngroup 10.1.2.0/24 1 5.0 17\n"),
		"answers not as written":    file("scout-rtt-cache 2\ngroup 10.1.2.0/24 1 5.0 02\n"),
		"listed without a time":     file("scout-rtt-cache 2\nlisted 10.1.2.0/24\n"),
		"listed twice":              file("scout-rtt-cache 2\nlisted 10.1.2.0/24 1\nlisted 10.1.2.0/24 2\n"),
		"listed not masked":         file("scout-rtt-cache 2\nlisted 10.1.2.3/24 1\n"),
		"listed time negative":      file("scout-rtt-cache 2\nlisted 10.1.2.0/24 -1\n"),
		"listed time past 9999":     file("scout-rtt-cache 2\nlisted 10.1.2.0/24 253402300800\n"),
		"unknown record":            file("scout-rtt-cache 1\nserver 1.2.3.4 5\n"),
		"wrong checksum":            []byte("scout-rtt-cache 1\nend 00000000\n"),
		"after the end":             append(file("scout-rtt-cache 1\n"), "group 203.0.113.0/24 1 5.0\n"...),
		"no newline at the end":     bytes.TrimSuffix(file("scout-rtt-cache 1\n"), []byte("\n")),
		"a /16":                     file("scout-rtt-cache 1\ngroup 10.1.0.0/16 1767225600 5.0\n"),
		"not masked":                file("scout-rtt-cache 1\ngroup 10.1.2.3/24 1767225600 5.0\n"),
		"mapped v4":                 file("scout-rtt-cache 1\ngroup ::ffff:10.1.2.0/120 1767225600 5.0\n"),
		"group twice":               file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0\ngroup 10.1.2.0/24 2 5.0\n"),
		"no sample":                 file("scout-rtt-cache 1\ngroup 10.1.2.0/24\n"),
		"half a sample":             file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0 2\n"),
		"too many samples":          file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0 2 5.0 3 5.0 4 5.0 5 5.0\n"),
		"samples out of order":      file("scout-rtt-cache 1\ngroup 10.1.2.0/24 2 5.0 1 5.0\n"),
		"RTT too large":             file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 60000.1\n"),
		"RTT zero":                  file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 0.0\n"),
		"RTT negative":              file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 -5.0\n"),
		"RTT NaN":                   file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 NaN\n"),
		"RTT not as written":        file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5\n"),
		"RTT in exponent":           file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5e1\n"),
		"time negative":             file("scout-rtt-cache 1\ngroup 10.1.2.0/24 -1 5.0\n"),
		"time past 9999":            file("scout-rtt-cache 1\ngroup 10.1.2.0/24 253402300800 5.0\n"),
		"vantage with a zone":       file("scout-rtt-cache 1\nvantage [fe80::1%eth0]:27950 5.0\n"),
		"vantage twice":             file("scout-rtt-cache 1\nvantage 1.2.3.4:5 5.0\nvantage 1.2.3.4:5 6.0\n"),
		"vantage without an RTT":    file("scout-rtt-cache 1\nvantage 1.2.3.4:5\n"),
		"empty line":                file("scout-rtt-cache 1\n\n"),
		"long line":                 file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0" + strings.Repeat(" ", maxLine) + "\n"),
	} {
		if _, err := Parse(b); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v, want ErrDamaged", name, err)
		}
	}
	if _, err := Parse(make([]byte, MaxFile+1)); !errors.Is(err, ErrDamaged) {
		t.Errorf("a file past MaxFile: %v", err)
	}
}

func TestParse_EveryTruncatedPrefixFails(t *testing.T) {
	b := goldenCache().AppendText(nil)
	for i := range len(b) {
		if _, err := Parse(b[:i]); !errors.Is(err, ErrDamaged) {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(goldenCache().AppendText(nil))
	f.Add(file("scout-rtt-cache 1\n"))
	f.Add(file("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0 2 7.5\n"))
	f.Add(file("scout-rtt-cache 2\ngroup 10.1.2.0/24 1 5.0 3\nlisted 10.1.3.0/24 1\n"))
	f.Add([]byte("scout-rtt-cache 1\ngroup 10.1.2.0/24 1 5.0\nend 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("error %v is not ErrDamaged", err)
			}
			return
		}
		out := c.AppendText(nil)
		c2, err := Parse(out)
		if err != nil {
			t.Fatalf("written back, it does not parse: %v\n%s", err, out)
		}
		if !bytes.Equal(c2.AppendText(nil), out) {
			t.Fatal("parse, write, parse, write: not the same bytes")
		}
	})
}

func TestLoad_MissingIsEmpty(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "none"))
	if err != nil || c.Len() != 0 {
		t.Fatalf("%v, %v", c, err)
	}
}

func TestLoad_DamagedIsMovedAsideAndEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	b := goldenCache().AppendText(nil)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if !errors.Is(err, ErrDamaged) || c == nil || c.Len() != 0 {
		t.Fatalf("Load: %v, %v; want an empty memory and ErrDamaged", c, err)
	}
	kept, rerr := os.ReadFile(path + DamagedSuffix)
	if rerr != nil || !bytes.Equal(kept, b) {
		t.Errorf("the damaged file was not kept aside: %v", rerr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the damaged file is still in place")
	}
}

func TestSave_ThenLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scout", FileName)
	if err := Save(path, goldenCache()); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.AppendText(nil), goldenCache().AppendText(nil)) {
		t.Error("loaded memory differs from the saved one")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
