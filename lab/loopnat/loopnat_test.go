package loopnat

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/probe"
)

var (
	pubA = netip.MustParseAddrPort("81.169.12.34:27960")
	pubB = netip.MustParseAddrPort("81.169.12.34:27961")
	loA  = netip.MustParseAddrPort("127.1.0.7:27960")
	loB  = netip.MustParseAddrPort("127.1.0.7:27961")
)

func TestNew_Bijective(t *testing.T) {
	tab, err := New([]Pair{{pubA, loA}, {pubB, loB}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Pair{{pubA, loA}, {pubB, loB}} {
		if lo, ok := tab.Loopback(p.Public); !ok || lo != p.Loopback {
			t.Errorf("Loopback(%v) = %v, %v; want %v", p.Public, lo, ok, p.Loopback)
		}
		if pub, ok := tab.Public(p.Loopback); !ok || pub != p.Public {
			t.Errorf("Public(%v) = %v, %v; want %v", p.Loopback, pub, ok, p.Public)
		}
	}
	mapped := netip.AddrPortFrom(netip.AddrFrom16(pubA.Addr().As16()), pubA.Port())
	if lo, ok := tab.Loopback(mapped); !ok || lo != loA {
		t.Errorf("Loopback(IPv4-mapped %v) = %v, %v", mapped, lo, ok)
	}
}

func TestNew_Refuses(t *testing.T) {
	for name, pairs := range map[string][]Pair{
		"loopback side public":   {{netip.MustParseAddrPort("8.8.8.8:1"), netip.MustParseAddrPort("8.8.4.4:1")}},
		"loopback side private":  {{pubA, netip.MustParseAddrPort("10.0.0.1:27960")}},
		"loopback side ipv6 ::1": {{pubA, netip.MustParseAddrPort("[::1]:27960")}},
		"public side loopback":   {{netip.MustParseAddrPort("127.0.0.2:1"), loA}},
		"public side ipv6":       {{netip.MustParseAddrPort("[2001:db8::1]:1"), loA}},
		"port zero public":       {{netip.MustParseAddrPort("81.169.12.34:0"), loA}},
		"port zero loopback":     {{pubA, netip.MustParseAddrPort("127.1.0.7:0")}},
		"zero pair":              {{}},
		"public twice":           {{pubA, loA}, {pubA, loB}},
		"loopback twice":         {{pubA, loA}, {pubB, loA}},
	} {
		if _, err := New(pairs); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: New = %v, want ErrInvalid", name, err)
		}
	}
}

func TestTable_FileRoundTrip(t *testing.T) {
	tab, err := New([]Pair{{pubB, loB}, {pubA, loA}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tab.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"pairs":[{"public":"81.169.12.34:27960","loopback":"127.1.0.7:27960"},{"public":"81.169.12.34:27961","loopback":"127.1.0.7:27961"}]}` + "\n"
	if buf.String() != want {
		t.Errorf("file:\n%s\nwant\n%s", buf.String(), want)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != 2 {
		t.Errorf("read back %d pairs", back.Len())
	}
	for name, in := range map[string]string{
		"version 2":     `{"version":2,"pairs":[]}`,
		"not json":      `{`,
		"off loopback":  `{"version":1,"pairs":[{"public":"81.169.12.34:27960","loopback":"192.168.1.1:27960"}]}`,
		"missing field": `{"version":1,"pairs":[{"public":"81.169.12.34:27960"}]}`,
	} {
		if _, err := Read(strings.NewReader(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Read = %v, want ErrInvalid", name, err)
		}
	}
}

// fakeConn records writes and replays queued reads.
type fakeConn struct {
	writes []netip.AddrPort
	reads  []netip.AddrPort
}

func (f *fakeConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	if len(f.reads) == 0 {
		return 0, netip.AddrPort{}, net.ErrClosed
	}
	from := f.reads[0]
	f.reads = f.reads[1:]
	return copy(b, "x"), from, nil
}
func (f *fakeConn) WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error) {
	f.writes = append(f.writes, to)
	return len(b), nil
}
func (f *fakeConn) SetDeadline(time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }
func (f *fakeConn) LocalAddr() net.Addr              { return nil }
func (f *fakeConn) Close() error                     { return nil }

func TestConn_NothingLeavesLoopback(t *testing.T) {
	tab, _ := New([]Pair{{pubA, loA}})
	fc := &fakeConn{}
	c := Wrap(fc, tab)
	client := netip.MustParseAddrPort("127.0.0.1:5000")
	for _, to := range []netip.AddrPort{
		pubA, // translated
		client,
		netip.MustParseAddrPort("8.8.8.8:53"), // unmapped public: dropped
		netip.MustParseAddrPort("192.168.1.1:27960"), // unmapped private: dropped
		pubB, // same IP as pubA, other port, unmapped: dropped
	} {
		if n, err := c.WriteToUDPAddrPort([]byte("ping"), to); n != 4 || err != nil {
			t.Errorf("write to %v = %d, %v", to, n, err)
		}
	}
	want := []netip.AddrPort{loA, client}
	if len(fc.writes) != len(want) || fc.writes[0] != want[0] || fc.writes[1] != want[1] {
		t.Errorf("sent to %v, want %v", fc.writes, want)
	}
	for _, to := range fc.writes {
		if !to.Addr().IsLoopback() {
			t.Errorf("sent off loopback to %v", to)
		}
	}
	if s := c.Stats(); s.SentTranslated != 1 || s.SentLoopback != 1 || s.DroppedUnmapped != 3 {
		t.Errorf("stats %+v", s)
	}
}

func TestConn_ReadTranslatesAndDropsForeign(t *testing.T) {
	tab, _ := New([]Pair{{pubA, loA}})
	client := netip.MustParseAddrPort("127.0.0.1:5000")
	fc := &fakeConn{reads: []netip.AddrPort{netip.MustParseAddrPort("8.8.8.8:53"), loA, client}}
	c := Wrap(fc, tab)
	buf := make([]byte, 16)
	var got []netip.AddrPort
	for {
		_, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			break
		}
		got = append(got, from)
	}
	if len(got) != 2 || got[0] != pubA || got[1] != client {
		t.Errorf("read from %v, want [%v %v]", got, pubA, client)
	}
	if s := c.Stats(); s.DroppedForeign != 1 || s.ReadTranslated != 1 || s.ReadLoopback != 1 {
		t.Errorf("stats %+v", s)
	}
}

// publicServer opens a "public" server's socket on 127.1.0.9 (closed
// when t ends; the test is skipped where it cannot be bound) and returns
// it, its public address (81.169.12.35, the same port) and a table of the
// pair.
func publicServer(t *testing.T) (*net.UDPConn, netip.AddrPort, *Table) {
	t.Helper()
	srv, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.1.0.9:0")))
	if err != nil {
		t.Skipf("cannot bind 127.1.0.9 (needs Linux loopback /8): %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	lo := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	pub := netip.AddrPortFrom(netip.MustParseAddr("81.169.12.35"), lo.Port())
	tab, err := New([]Pair{{pub, lo}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, pub, tab
}

// TestConn_RealSockets sends through a wrapped socket to a "public" server
// that lives on 127.1.0.x and reads its answer back under the public name.
func TestConn_RealSockets(t *testing.T) {
	srv, pub, tab := publicServer(t)
	cli, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c := Wrap(cli, tab)
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	c.SetDeadline(deadline)
	srv.SetDeadline(deadline)

	if _, err := c.WriteToUDPAddrPort([]byte("ping"), pub); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, from, err := srv.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("server read %q, %v", buf[:n], err)
	}
	if from.Addr() != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("server sees client as %v, want its loopback address", from)
	}
	from0 := from
	if _, err := srv.WriteToUDPAddrPort([]byte("pong"), from); err != nil {
		t.Fatal(err)
	}
	n, from, err = c.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "pong" || from != pub {
		t.Errorf("client read %q from %v, %v; want pong from %v", buf[:n], from, err, pub)
	}
	srv.WriteToUDPAddrPort([]byte("again"), from0)
	n, _, _, from, err = c.ReadMsgUDPAddrPort(buf, make([]byte, 64))
	if err != nil || string(buf[:n]) != "again" || from != pub {
		t.Errorf("ReadMsgUDPAddrPort %q from %v, %v; want again from %v", buf[:n], from, err, pub)
	}
	if _, _, _, _, err := Wrap(&fakeConn{}, tab).ReadMsgUDPAddrPort(buf, nil); !errors.Is(err, ErrNoMsg) {
		t.Errorf("without ReadMsgUDPAddrPort: %v", err)
	}
}

// TestConn_ReadStampedKeepsTheKernelsTime reads a reply through a Conn
// over a socket with the kernel's receive timestamps (probe's, as scout
// servers and the demo probe an emulated world): it comes under the public
// name with a receive time between its send and the read and a lag of 0
// or more; over a plain socket, at the read with lag -1.
func TestConn_ReadStampedKeepsTheKernelsTime(t *testing.T) {
	srv, pub, tab := publicServer(t)
	for _, kernel := range []bool{true, false} {
		cli, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		inner := PacketConn(cli)
		if kernel {
			sc, ok := probe.KernelTimestamps(cli)
			if !ok {
				cli.Close()
				t.Skip("no kernel receive timestamps on this platform")
			}
			inner = sc.(PacketConn)
		}
		c := Wrap(inner, tab)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		sent := time.Now()
		if _, err := srv.WriteToUDPAddrPort([]byte("pong"), cli.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		n, from, at, lag, err := c.ReadStamped(buf)
		read := time.Now()
		if err != nil || string(buf[:n]) != "pong" || from != pub {
			t.Errorf("kernel %v: read %q from %v, %v; want pong from %v", kernel, buf[:n], from, err, pub)
		}
		if kernel && (lag < 0 || at.Before(sent) || at.After(read)) {
			t.Errorf("kernel timestamps: at %v after the send, %v before the read, lag %v", at.Sub(sent), read.Sub(at), lag)
		}
		if !kernel && (lag != -1 || at.Before(sent) || at.After(read)) {
			t.Errorf("plain socket: lag %v, at %v after the send", lag, at.Sub(sent))
		}
		c.Close()
	}
}
