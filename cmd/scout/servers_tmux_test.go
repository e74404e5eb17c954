package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/internal/tmux"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// screenWait bounds each wait for the terminal to show something.
const screenWait = 30 * time.Second

// termWorld is a loopback world for the terminal tests: a scout master,
// servers on loopback addresses of their own that heartbeat to it and
// answer with a delay of their own (so the nearest are known), and a
// real OpenArena server with two bots.
type termWorld struct {
	master  netip.AddrPort
	servers []termServer // in ascending delay
	oa      netip.AddrPort
	listed  int // servers the master lists
}

// termServer is one server of a termWorld.
type termServer struct {
	addr    netip.AddrPort
	name    string
	mapName string
	players int
	delay   time.Duration
	silent  bool   // answers the master's checks only
	stop    func() // closes its socket (serveTerm sets it)
}

var termMaps = []string{"q3dm17", "q3dm6", "q3tourney2", "q3ctf1", "oa_dm1"}

// startTermWorld starts a master, answering servers, silent ones (which
// answer the master alone) and, with openArena, a real OpenArena server.
func startTermWorld(t *testing.T, bin string, answering, silent int, openArena bool) termWorld {
	t.Helper()
	m := startMaster(t, bin, "-l", "127.0.0.1", "-p", "0", "--list-loopback")
	w := termWorld{master: netip.MustParseAddrPort(m.waitLog(t, "listening", "port", "master")["addr"].(string))}
	for i := range answering + silent {
		name := fmt.Sprintf("^%dServer %02d ^7%s", 1+i%7, i, []string{"Arena", "Frag Fest", "Rail Only", "Duel"}[i%4])
		switch i {
		case 3:
			name = "^3東京 サーバー 東京 サーバー 東京 サーバー 東京"
		case 5:
			name = strings.Repeat("^1Very ^2long ^3name ", 8)
		case 7:
			name = "\xc1\xe2\xe3 high glyphs \x10\x12\x11"
		}
		fs := termServer{name: name, mapName: termMaps[i%len(termMaps)], players: i % 9,
			delay: time.Duration(2+3*i) * time.Millisecond, silent: i >= answering}
		w.servers = append(w.servers, serveTerm(t, fs, 10+i, w.master))
	}
	want := len(w.servers)
	if openArena {
		oa := peer.StartOpenArena(t, peer.OpenArenaConfig{Master: w.master.String(), Hostname: "^1Open^7Arena peer",
			Bots: []string{"sarge", "grism"}, Lifetime: 5 * time.Minute})
		w.oa = oa.Addr
		want++
	}
	deadline := time.Now().Add(screenWait)
	for w.listed < want {
		n, err := peer.CountListed(w.master, []byte(q3.Prefix+"getservers 71 empty full\n"), time.Second)
		if err == nil {
			w.listed = n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the master lists %d servers of %d", w.listed, want)
		}
		if w.listed < want {
			<-time.After(50 * time.Millisecond) // the master verifies each heartbeat with a challenge first
		}
	}
	return w
}

// serveTerm starts fs on 127.0.0.host (a port the kernel picks): it heartbeats to master and
// answers getinfo and getstatus after fs.delay (a silent server answers
// only the master).
func serveTerm(t *testing.T, fs termServer, host int, master netip.AddrPort) termServer {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(host)}), 0)))
	if err != nil {
		t.Fatal(err)
	}
	fs.addr = c.LocalAddr().(*net.UDPAddr).AddrPort()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if fs.silent && from != master {
				continue
			}
			msg, err := q3.Parse(buf[:n])
			if err != nil {
				continue
			}
			info := infostring.Info{{Key: "gamename", Value: "Quake3Arena"}, {Key: "protocol", Value: "71"},
				{Key: "sv_maxclients", Value: "8"}, {Key: "clients", Value: strconv.Itoa(fs.players)},
				{Key: "hostname", Value: fs.name}, {Key: "mapname", Value: fs.mapName}, {Key: "gametype", Value: "0"}}
			var out []byte
			switch m := msg.(type) {
			case q3.GetInfo:
				info = append(info, infostring.Pair{Key: "challenge", Value: m.Challenge})
				out, _ = q3.InfoResponse{Info: info}.AppendBinary(nil)
			case q3.GetStatus:
				info = append(info, infostring.Pair{Key: "challenge", Value: m.Challenge})
				var ps []q3.Player
				for p := range fs.players {
					ps = append(ps, q3.Player{Name: fmt.Sprintf("^%dplayer%d", p%8, p), Score: 10 * p, Ping: 20 + p})
				}
				out, _ = q3.StatusResponse{Info: info, Players: ps}.AppendBinary(nil)
			default:
				continue
			}
			time.AfterFunc(fs.delay, func() { c.WriteToUDPAddrPort(out, from) }) // the server's distance
		}
	}()
	fs.stop = func() { c.Close() }
	t.Cleanup(fs.stop)
	if _, err := c.WriteToUDPAddrPort([]byte(q3.Prefix+"heartbeat QuakeArena-1\n"), master); err != nil {
		t.Fatal(err)
	}
	return fs
}

var (
	pingRe    = regexp.MustCompile(`(\d+(?:\.\d)?) ms`)
	playersRe = regexp.MustCompile(` (\d+)/(\d+) `)
)

// rows are the server rows of the browser's screen: the lines between
// the column header and the status line.
func rows(sc []string) []string {
	var out []string
	for _, l := range sc[2 : len(sc)-1] {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// fits says what is wrong when a line of the screen wrapped, or the
// header, the column titles or the status line is not where it belongs.
func fits(s *tmux.Session, sc []string) error {
	if n := s.Wrapped(); n != 0 {
		return fmt.Errorf("%dx%d: %d lines wrapped", s.Width, s.Height, n)
	}
	switch {
	case len(sc) != s.Height:
		return fmt.Errorf("%dx%d: %d lines on the screen", s.Width, s.Height, len(sc))
	case !strings.HasPrefix(sc[0], "scout Quake3Arena") || !strings.HasPrefix(sc[1], "NAME"):
		return fmt.Errorf("%dx%d: the title and the column header are not at the top", s.Width, s.Height)
	case !strings.Contains(sc[len(sc)-1], "details") && !strings.Contains(sc[len(sc)-1], "esc back"):
		return fmt.Errorf("%dx%d: the status line is not at the bottom", s.Width, s.Height)
	}
	return nil
}

// pings reads the rows' pings, nearest first or not.
func pings(rs []string) ([]float64, error) {
	var out []float64
	for _, r := range rs {
		m := pingRe.FindStringSubmatch(r)
		if m == nil {
			return nil, fmt.Errorf("row without a ping: %q", r)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, v)
	}
	return out, nil
}

// nearestFirst says what is wrong unless the screen fits and its rows,
// n of them, are nearest first.
func nearestFirst(s *tmux.Session, sc []string, n int) error {
	if err := fits(s, sc); err != nil {
		return err
	}
	rs := rows(sc)
	if len(rs) != n {
		return fmt.Errorf("%d rows on a %d-line screen, want %d", len(rs), s.Height, n)
	}
	p, err := pings(rs)
	if err == nil && !slices.IsSorted(p) {
		err = fmt.Errorf("rows not nearest first: %v", p)
	}
	return err
}

// Each wait below is for the whole frame the step should show (WaitCheck):
// tmux may show the top of a new frame, the title, before the program has
// written the rows below it.
func TestServers_BrowserInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scout, a master, OpenArena and tmux")
	}
	bin := buildScout(t)
	w := startTermWorld(t, bin, 40, 0, true)

	// The launch command records its arguments.
	cfg := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(cfg, "game.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+ran+"\n"), 0o755)
	os.MkdirAll(filepath.Join(cfg, "scout"), 0o755)
	os.WriteFile(filepath.Join(cfg, "scout", "launch.conf"), []byte("# test\nQuake3Arena = "+script+" +set fs_game baseq3\n"), 0o644)
	env := []string{"XDG_CONFIG_HOME=" + cfg, "HOME=" + cfg}
	argv := []string{bin, "servers", "--game", "q3", "--master", w.master.String(), "--status"}
	done := fmt.Sprintf("answered %d", w.listed)
	// finished: the run's end with every server answered.
	finished := func(sc []string) error {
		if !strings.Contains(sc[0], "done in") || !strings.Contains(sc[0], done) {
			return errors.New("the title does not say the run is done with every server answered")
		}
		return nil
	}

	t.Run("80x24", func(t *testing.T) {
		s := tmux.Start(t, 80, 24, env, argv...)
		s.WaitCheck("the end of the run, nearest first", screenWait, func(sc []string) error {
			if err := finished(sc); err != nil {
				return err
			}
			if !strings.Contains(sc[1], "PING*") || strings.Contains(sc[1], "TYPE") {
				return fmt.Errorf("at 80 columns the header is %q: want PING sorted and TYPE dropped", sc[1])
			}
			return nearestFirst(s, sc, min(w.listed, 24-3))
		})

		s.SendKeys("s")
		s.WaitCheck("the players order", screenWait, func(sc []string) error {
			if !strings.Contains(sc[1], "PLAYERS*") {
				return errors.New("the header does not mark PLAYERS")
			}
			if err := fits(s, sc); err != nil {
				return err
			}
			var counts []int
			for _, r := range rows(sc) {
				if m := playersRe.FindStringSubmatch(r); m != nil {
					n, _ := strconv.Atoi(m[1])
					counts = append(counts, n)
				}
			}
			if len(counts) == 0 || !slices.IsSortedFunc(counts, func(a, b int) int { return b - a }) {
				return fmt.Errorf("rows not by players, most first: %v", counts)
			}
			return nil
		})

		s.SendKeys("m")
		s.Type("q3dm17")
		s.SendKeys("Enter")
		s.WaitCheck("the map filter", screenWait, func(sc []string) error {
			if !tmux.Contains("filter: map ~q3dm17")(sc) {
				return errors.New("the status line does not say the filter")
			}
			if err := fits(s, sc); err != nil {
				return err
			}
			rs := rows(sc)
			if len(rs) == 0 {
				return errors.New("no row")
			}
			for _, r := range rs {
				if !strings.Contains(r, "q3dm17") {
					return fmt.Errorf("map filter shows %q", r)
				}
			}
			return nil
		})
		s.SendKeys("Escape")
		s.WaitFor("the filters cleared", screenWait, tmux.Contains("filters cleared"))

		s.SendKeys("e")
		s.WaitCheck("empty servers hidden", screenWait, func(sc []string) error {
			if !tmux.Contains("not empty")(sc) {
				return errors.New("the status line does not say the filter")
			}
			for _, r := range rows(sc) {
				if strings.Contains(r, " 0/") {
					return fmt.Errorf("hide empty shows %q", r)
				}
			}
			return nil
		})
		s.SendKeys("Escape")
		s.WaitFor("the filters cleared", screenWait, tmux.Contains("filters cleared"))

		s.SendKeys("/")
		s.Type("arena peer")
		s.SendKeys("Enter")
		s.WaitFor("the OpenArena server alone", screenWait, func(sc []string) bool {
			rs := rows(sc)
			return len(rs) == 1 && strings.HasPrefix(rs[0], "OpenArena peer")
		})
		s.SendKeys("Enter")
		s.WaitCheck("its details", screenWait, func(sc []string) error {
			text := strings.Join(sc, "\n")
			for _, want := range []string{"SETTINGS", "address  " + w.oa.String(), "Sarge", "Grism", "bot?"} {
				if !strings.Contains(text, want) {
					return fmt.Errorf("the details lack %q", want)
				}
			}
			if n := s.Wrapped(); n != 0 {
				return errors.New("the details wrapped")
			}
			return nil
		})
		s.SendKeys("y")
		s.WaitFor("the copy", screenWait, tmux.Contains("copied "+w.oa.String()))
		s.SendKeys("c")
		s.WaitFor("the game's end", screenWait, tmux.Contains("the game has exited"))
		if b, err := os.ReadFile(ran); err != nil || strings.TrimSpace(string(b)) != "+set fs_game baseq3 +connect "+w.oa.String() {
			t.Errorf("the launch command ran with %q (%v)", b, err)
		}
		s.SendKeys("Escape")
		s.WaitFor("the list", screenWait, func(sc []string) bool { return strings.HasPrefix(sc[1], "NAME") })
		s.SendKeys("q")
		sc := s.WaitExit(screenWait)
		text := strings.Join(sc, "\n")
		if !strings.Contains(text, "copied "+w.oa.String()) || !strings.Contains(text, fmt.Sprintf("%d servers listed, %d answered", w.listed, w.listed)) {
			t.Errorf("after the browser, the terminal shows:\n%s", text)
		}
	})

	t.Run("200x50", func(t *testing.T) {
		s := tmux.Start(t, 200, 50, env, argv...)
		s.WaitCheck("the end of the run, nearest first", screenWait, func(sc []string) error {
			if err := finished(sc); err != nil {
				return err
			}
			for _, col := range []string{"NAME", "MAP", "PLAYERS", "PING*", "ADDRESS", "GAME", "TYPE"} {
				if !strings.Contains(sc[1], col) {
					return fmt.Errorf("at 200 columns the header %q lacks %s", sc[1], col)
				}
			}
			return nearestFirst(s, sc, min(w.listed, 50-3))
		})
		s.SendKeys("s", "s")
		s.WaitCheck("the name order", screenWait, func(sc []string) error {
			if !strings.Contains(sc[1], "NAME*") {
				return errors.New("the header does not mark NAME")
			}
			return fits(s, sc)
		})

		// A refresh is a new run: the nearest server, silenced since the
		// first, does not answer it.
		w.servers[0].stop()
		s.SendKeys("r")
		s.WaitCheck("the refreshed run", screenWait, func(sc []string) error {
			if !strings.Contains(sc[0], "done in") || !strings.Contains(sc[0], fmt.Sprintf("answered %d ", w.listed-1)) {
				return fmt.Errorf("the title does not say a run is done with %d servers answered", w.listed-1)
			}
			if tmux.Contains(w.servers[0].addr.String())(rows(sc)) {
				return errors.New("the silenced server is shown")
			}
			return fits(s, sc)
		})

		s.SendKeys("p")
		s.Type("15")
		s.SendKeys("Enter")
		s.WaitCheck("the max ping filter", screenWait, func(sc []string) error {
			if !tmux.Contains("filter: ping <= 15 ms")(sc) {
				return errors.New("the status line does not say the filter")
			}
			if err := fits(s, sc); err != nil {
				return err
			}
			p, err := pings(rows(sc))
			if err != nil {
				return err
			}
			if len(p) == 0 || slices.Max(p) > 15 {
				return fmt.Errorf("pings %v, want some and none above 15 ms", p)
			}
			return nil
		})
		s.SendKeys("q")
		s.WaitExit(screenWait)
	})
}

// progressRe matches the plain progress line with ten servers answered
// after the run's first second.
var progressRe = regexp.MustCompile(`answered 10  [1-9]\d*\.\ds`)

// summaryRe reads the plain summary line.
var summaryRe = regexp.MustCompile(`(\d+) servers listed: (\d+) answered, (\d+) silent, (\d+) unreachable, (\d+) stopped, (\d+) not probed`)

// checkSummary fails unless the screen has a summary line whose counts
// add up to the servers listed; it returns the counts.
func checkSummary(t *testing.T, sc []string) []int {
	t.Helper()
	text := strings.ReplaceAll(strings.Join(sc, "\n"), "\n  ", " ") // lines broken to fit the terminal
	m := summaryRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no summary line:\n%s", text)
	}
	var n []int
	for _, s := range m[1:] {
		v, _ := strconv.Atoi(s)
		n = append(n, v)
	}
	if n[1]+n[2]+n[3]+n[4]+n[5] != n[0] {
		t.Errorf("the summary does not add up: %q", m[0])
	}
	return n
}

func TestServers_PlainEndsWithTheBestServers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scout, a master and tmux")
	}
	bin := buildScout(t)
	w := startTermWorld(t, bin, 40, 0, false)
	s := tmux.Start(t, 80, 24, nil, bin, "servers", "--game", "q3", "--master", w.master.String(), "--plain")
	sc := s.WaitExit(screenWait)
	if n := s.Wrapped(); n != 0 {
		t.Errorf("%d lines wrapped:\n%s", n, tmux.String(s.History()))
	}
	n := checkSummary(t, sc)
	if n[0] != w.listed || n[1] != w.listed {
		t.Errorf("summary %v, want all %d listed and answered", n, w.listed)
	}
	text := strings.Join(sc, "\n")
	// The nearest server (the least delay) is on the screen; the
	// farthest is not, and the line that says so is.
	if !strings.Contains(text, w.servers[0].addr.String()) || strings.Contains(text, w.servers[len(w.servers)-1].addr.String()) {
		t.Errorf("the screen does not end with the best servers:\n%s", text)
	}
	if !strings.Contains(text, "more, by ping") {
		t.Errorf("the screen does not say how many servers are not shown:\n%s", text)
	}
}

func TestServers_InterruptedSummaryAddsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scout, a master and tmux")
	}
	bin := buildScout(t)
	w := startTermWorld(t, bin, 10, 30, false)
	// Conventional discovery probes every server at once; the default
	// order holds a /24's servers behind a first one, and here a silent
	// first one costs its 20 s timeouts first.
	s := tmux.Start(t, 120, 40, nil, bin, "servers", "--game", "q3", "--master", w.master.String(), "--plain",
		"--timeout", "20s", "--strategy", "et", "--window", "64", "--order", "master")
	// The progress line goes on while the silent servers' probes wait
	// for their timeouts: its clock passes a second with the tenth answer.
	s.WaitFor("answers, and the clock going on", screenWait, func(sc []string) bool {
		for _, l := range sc {
			if progressRe.MatchString(l) {
				return true
			}
		}
		return false
	})
	s.SendKeys("C-c")
	sc := s.WaitExit(screenWait)
	n := checkSummary(t, sc)
	if n[0] != w.listed || n[1] != 10 || n[4] == 0 {
		t.Errorf("summary %v: want %d listed, 10 answered and the silent ones stopped", n, w.listed)
	}
	for _, l := range sc {
		if strings.Contains(l, "context canceled") {
			t.Errorf("noise after Ctrl-C: %q", l)
		}
	}
}
