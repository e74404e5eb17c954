package tui

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/infostring"
)

// server is an answered server for the tests.
func server(addr, name, mapName string, players, maxPlayers int, rttMs float64, info ...string) probe.Result {
	r := probe.Result{Addr: netip.MustParseAddrPort(addr), Game: "q3", Name: name, Map: mapName, GameType: "0",
		Protocol: "68", NumPlayers: players, MaxPlayers: maxPlayers, RTT: time.Duration(rttMs * float64(time.Millisecond))}
	for i := 0; i+1 < len(info); i += 2 {
		r.Info = append(r.Info, infostring.Pair{Key: info[i], Value: info[i+1]})
	}
	return r
}

// probed is a batch of Probed events of run 1.
func probed(rs ...probe.Result) EventsMsg {
	var es []discover.Event
	for _, r := range rs {
		es = append(es, discover.Listed{Addr: r.Addr, Master: "master.test"},
			discover.Probed{Server: discover.Server{Result: r, Masters: []string{"master.test"}}})
	}
	return EventsMsg{Gen: 1, Events: es, Elapsed: time.Second}
}

func update(t *testing.T, m Model, msgs ...tea.Msg) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, msg := range msgs {
		var next tea.Model
		next, cmd = m.Update(msg)
		m = next.(Model)
	}
	return m, cmd
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// typed is the keys of a string typed in a prompt.
func typed(s string) []tea.Msg {
	var ks []tea.Msg
	for _, r := range s {
		ks = append(ks, key(string(r)))
	}
	return ks
}

// screen is the view as plain lines.
func screen(m Model) []string { return strings.Split(ansi.Strip(m.Render()), "\n") }

// names are the servers' names on the screen, in order (the lines between
// the column header and the status line that start with a name).
func rowsOf(m Model) []string {
	lines := screen(m)
	return lines[2 : len(lines)-1]
}

func world() []probe.Result {
	return []probe.Result{
		server("192.0.2.10:27960", "^1Far ^7Away", "q3dm17", 4, 16, 180),
		server("192.0.2.11:27960", "Near", "q3dm6", 0, 12, 12.5, "gamename", "baseoa"),
		server("192.0.2.12:27961", "Full House", "q3tourney2", 2, 2, 48),
		server("192.0.2.13:27960", "Middle", "q3dm17", 7, 20, 75, "gamename", "cpma"),
	}
}

func TestModel_StreamsNearestFirst(t *testing.T) {
	rs := world()
	m, _ := update(t, New(Options{Game: "Quake3Arena", Masters: 1}), probed(rs[0]), probed(rs[1]))
	if got := rowsOf(m); !strings.HasPrefix(got[0], "Near") || !strings.HasPrefix(got[1], "Far Away") {
		t.Fatalf("after two results, rows = %q, want Near then Far Away", got[:2])
	}
	m, _ = update(t, m, probed(rs[2], rs[3]))
	var order []string
	for _, l := range rowsOf(m)[:4] {
		order = append(order, strings.Fields(l)[0])
	}
	if want := []string{"Near", "Full", "Middle", "Far"}; !slices.Equal(order, want) {
		t.Fatalf("rows start %q, want %q (nearest first)", order, want)
	}
	if title := screen(m)[0]; !strings.Contains(title, "answered 4") || !strings.Contains(title, "probed 4/4") {
		t.Errorf("title %q does not count the run", title)
	}
}

func TestModel_NothingWraps(t *testing.T) {
	rs := world()
	rs = append(rs,
		server("192.0.2.20:27960", strings.Repeat("Long^3Name", 30), strings.Repeat("m", 80), 1, 8, 30),
		server("192.0.2.21:27960", "東京サーバー東京サーバー東京サーバー東京サーバー", "地図", 1, 8, 31),
		server("192.0.2.22:27960", "esc\x1b[2Jape\ttab\x00nul\xff\xfe", "m\x1b]0;x\x07", 1, 8, 32, "gamename", strings.Repeat("g", 40)),
		server("[2001:db8::1234:5678:9abc:def0]:27960", "v6", "q3dm1", 1, 8, 33),
	)
	for i := range 40 {
		rs = append(rs, server(fmt.Sprintf("198.51.100.%d:27960", i+1), fmt.Sprintf("filler %d", i), "q3dm1", i%9, 8, 40+float64(i)))
	}
	rs[5].Players = []probe.Player{{Name: strings.Repeat("W", 200), Score: 5, Ping: 50}, {Name: "bot", Score: 1}}
	for _, size := range [][2]int{{80, 24}, {81, 25}, {100, 30}, {132, 43}, {200, 50}, {40, 10}} {
		m, _ := update(t, New(Options{Game: "Quake3Arena", Masters: 1}), tea.WindowSizeMsg{Width: size[0], Height: size[1]}, probed(rs...))
		for _, view := range []string{"list", "details", "help", "prompt"} {
			v := m
			switch view {
			case "details":
				v, _ = update(t, v, key("end"), key("up"), key("enter")) // a long server, with players
			case "help":
				v, _ = update(t, v, key("?"))
			case "prompt":
				v, _ = update(t, v, append([]tea.Msg{key("/")}, typed(strings.Repeat("x", 100))...)...)
			}
			lines := strings.Split(v.Render(), "\n")
			if len(lines) != size[1] {
				t.Errorf("%dx%d %s: %d lines, want %d", size[0], size[1], view, len(lines), size[1])
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%dx%d %s: line %d is %d cells wide: %q", size[0], size[1], view, i, w, ansi.Strip(l))
				}
				if strings.ContainsAny(ansi.Strip(l), "\t\x00\x07") {
					t.Errorf("%dx%d %s: line %d holds a control character: %q", size[0], size[1], view, i, ansi.Strip(l))
				}
			}
		}
	}
}

func TestModel_SortCycles(t *testing.T) {
	m, _ := update(t, New(Options{}), probed(world()...))
	want := []struct {
		order, first, marked string
	}{
		{"players", "Middle", "PLAYERS*"},
		{"name", "Far", "NAME*"},
		{"map", "Middle", "MAP*"}, // q3dm17 twice: the nearer first
		{"ping", "Near", "PING*"},
	}
	for _, w := range want {
		m, _ = update(t, m, key("s"))
		if m.order != w.order {
			t.Fatalf("order %q, want %q", m.order, w.order)
		}
		if first := strings.Fields(rowsOf(m)[0])[0]; first != w.first {
			t.Errorf("sorted by %s: first row %q, want %q", w.order, first, w.first)
		}
		if h := screen(m)[1]; !strings.Contains(h, w.marked) {
			t.Errorf("sorted by %s: header %q lacks %q", w.order, h, w.marked)
		}
	}
}

// shownNames are the first words of the rows shown.
func shownNames(m Model) []string {
	var ns []string
	for _, r := range m.shown {
		ns = append(ns, strings.Fields(browser.Name(r.Name))[0])
	}
	return ns
}

func TestModel_Filters(t *testing.T) {
	base, _ := update(t, New(Options{}), probed(world()...))
	base.results[0].Players = []probe.Player{{Name: "^2Sarge"}}
	base.refresh()
	for _, tc := range []struct {
		name string
		keys []tea.Msg
		want []string
	}{
		{"hide empty", []tea.Msg{key("e")}, []string{"Full", "Middle", "Far"}},
		{"hide full", []tea.Msg{key("f")}, []string{"Near", "Middle", "Far"}},
		{"both", []tea.Msg{key("e"), key("f")}, []string{"Middle", "Far"}},
		{"map", append(append([]tea.Msg{key("m")}, typed("DM17")...), key("enter")), []string{"Middle", "Far"}},
		{"game", append(append([]tea.Msg{key("g")}, typed("baseoa")...), key("enter")), []string{"Near"}},
		{"max ping", append(append([]tea.Msg{key("p")}, typed("50")...), key("enter")), []string{"Near", "Full"}},
		{"max ping duration", append(append([]tea.Msg{key("p")}, typed("0.1s")...), key("enter")), []string{"Near", "Full", "Middle"}},
		{"text in a name", append(append([]tea.Msg{key("/")}, typed("house")...), key("enter")), []string{"Full"}},
		{"text in a player", append(append([]tea.Msg{key("/")}, typed("sarge")...), key("enter")), []string{"Far"}},
		{"text in an address", append(append([]tea.Msg{key("/")}, typed("192.0.2.12")...), key("enter")), []string{"Full"}},
		{"esc clears", []tea.Msg{key("e"), key("f"), key("esc")}, []string{"Near", "Full", "Middle", "Far"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := update(t, base, tc.keys...)
			if got := shownNames(m); !slices.Equal(got, tc.want) {
				t.Errorf("shown %q, want %q", got, tc.want)
			}
			if m.mode != modeList {
				t.Errorf("mode %d after the keys, want the list", m.mode)
			}
		})
	}
}

func TestModel_PromptFollowsTypingAndEscRestores(t *testing.T) {
	m, _ := update(t, New(Options{}), probed(world()...), key("m"))
	m, _ = update(t, m, typed("tour")...)
	if got := shownNames(m); !slices.Equal(got, []string{"Full"}) {
		t.Fatalf("while typing, shown %q, want Full", got)
	}
	if f := screen(m)[len(screen(m))-1]; !strings.HasPrefix(f, "map: tour_") {
		t.Errorf("status line %q, want the prompt", f)
	}
	m, _ = update(t, m, key("esc"))
	if len(m.shown) != 4 || m.filter.Map != "" {
		t.Errorf("after Esc, %d shown, map filter %q; want the filter before the prompt", len(m.shown), m.filter.Map)
	}
}

func TestModel_BadMaxPingKeepsTheFilter(t *testing.T) {
	m, _ := update(t, New(Options{}), probed(world()...), key("p"))
	m, _ = update(t, m, append(typed("fast"), key("enter"))...)
	if m.filter.MaxPing != 0 || len(m.shown) != 4 {
		t.Errorf("max ping %v, %d shown; want no filter", m.filter.MaxPing, len(m.shown))
	}
	if !strings.Contains(m.status, "max ping") {
		t.Errorf("status %q does not say what was wrong", m.status)
	}
}

func TestModel_CursorStaysOnTheChosenServer(t *testing.T) {
	rs := world()
	m, _ := update(t, New(Options{}), probed(rs[0], rs[3]), key("down")) // Middle, Far: Far chosen
	if r, _ := m.current(); r.Addr != rs[0].Addr {
		t.Fatalf("cursor on %v, want Far Away", r.Addr)
	}
	m, _ = update(t, m, probed(rs[1], rs[2])) // two nearer servers arrive above it
	if r, _ := m.current(); r.Addr != rs[0].Addr {
		t.Errorf("after nearer results, cursor on %v, want it kept on Far Away", r.Addr)
	}
	fresh, _ := update(t, New(Options{}), probed(rs[0]), probed(rs[1]))
	if r, _ := fresh.current(); r.Addr != rs[1].Addr {
		t.Errorf("untouched cursor on %v, want the nearest", r.Addr)
	}
}

func TestModel_DetailsShowPlayersAndSettings(t *testing.T) {
	r := server("192.0.2.30:27960", "^4Blue", "q3dm17", 2, 16, 20, "sv_hostname", "^4Blue", "g_gametype", "0")
	r.Players = []probe.Player{{Name: "^1Low", Score: 3, Ping: 40}, {Name: "High", Score: 30, Ping: 0}}
	m, _ := update(t, New(Options{}), tea.WindowSizeMsg{Width: 80, Height: 24}, probed(r), key("enter"))
	text := strings.Join(screen(m), "\n")
	for _, want := range []string{"Blue", "address  192.0.2.30:27960", "masters  master.test", "PLAYER", "sv_hostname", "g_gametype"} {
		if !strings.Contains(text, want) {
			t.Errorf("details lack %q:\n%s", want, text)
		}
	}
	if hi, lo := strings.Index(text, "High"), strings.Index(text, "Low"); hi < 0 || lo < 0 || hi > lo {
		t.Errorf("players not by score, highest first:\n%s", text)
	}
	if !strings.Contains(text, "bot?") {
		t.Errorf("a player with ping 0 is not marked as a likely bot:\n%s", text)
	}
	m, _ = update(t, m, key("esc"))
	if m.mode != modeList {
		t.Errorf("Esc leaves mode %d, want the list", m.mode)
	}
}

func TestModel_CopyAddress(t *testing.T) {
	m, cmd := update(t, New(Options{}), probed(world()...), key("y"))
	if cmd == nil {
		t.Fatal("y returned no command: nothing sets the clipboard")
	}
	if got := m.Copied(); !slices.Equal(got, []string{"192.0.2.11:27960"}) {
		t.Errorf("copied %q, want the nearest server's address", got)
	}
	if !strings.Contains(m.status, "192.0.2.11:27960") {
		t.Errorf("status %q does not show the address (the fallback for terminals without OSC 52)", m.status)
	}
}

func TestModel_ConnectRunsTheConfiguredCommand(t *testing.T) {
	var ran []string
	opt := Options{Game: "Quake3Arena", ConfigPath: "/home/p/.config/scout/launch.conf",
		Commands: Commands{"baseoa": {"/usr/games/openarena", "+set", "r_fullscreen", "0"}},
		Launch:   func(argv []string) tea.Cmd { ran = argv; return func() tea.Msg { return LaunchedMsg{} } }}
	m, cmd := update(t, New(opt), probed(world()...), key("c")) // Near: gamename baseoa
	want := []string{"/usr/games/openarena", "+set", "r_fullscreen", "0", "+connect", "192.0.2.11:27960"}
	if !slices.Equal(ran, want) || cmd == nil {
		t.Fatalf("c ran %q, want %q", ran, want)
	}
	ran = nil
	m, _ = update(t, m, key("down"), key("c")) // Full House: no gamename, no Quake3Arena command
	if ran != nil {
		t.Errorf("c ran %q for a game without a command", ran)
	}
	if !strings.Contains(m.status, "Quake3Arena = COMMAND") || !strings.Contains(m.status, opt.ConfigPath) {
		t.Errorf("status %q does not say how to configure the game", m.status)
	}
	m, _ = update(t, m, LaunchedMsg{Err: errors.New("exit status 1")})
	if !strings.Contains(m.status, "exit status 1") {
		t.Errorf("status %q does not report the game's failure", m.status)
	}
}

func TestModel_RefreshDropsTheOldRun(t *testing.T) {
	var started []int
	opt := Options{Start: func(gen int) tea.Cmd { started = append(started, gen); return nil }}
	m := New(opt)
	m.Init()
	m, _ = update(t, m, probed(world()...), key("r"))
	if !slices.Equal(started, []int{1, 2}) {
		t.Fatalf("runs started %v, want 1 then 2", started)
	}
	if len(m.shown) != 0 {
		t.Errorf("%d servers shown after refresh, want none until run 2 answers", len(m.shown))
	}
	m, _ = update(t, m, probed(world()...)) // late events of run 1
	if len(m.shown) != 0 {
		t.Errorf("run 1's late events shown after the refresh")
	}
	batch := probed(world()[0])
	batch.Gen = 2
	m, _ = update(t, m, batch, DoneMsg{Gen: 1, Err: errors.New("canceled")})
	if len(m.shown) != 1 || m.done != nil {
		t.Errorf("run 2: %d shown, done %v; want 1 and running", len(m.shown), m.done)
	}
}

// TestModel_SaysWhatItRefused: entries a public master listed at local
// addresses, not probed, are said once in the status line as they come
// (not only after quitting), then counted there; a refresh counts its own
// run's without saying it again.
func TestModel_SaysWhatItRefused(t *testing.T) {
	done := func(gen, refused int) EventsMsg {
		return EventsMsg{Gen: gen, Events: []discover.Event{discover.MasterDone{MasterReport: discover.MasterReport{Name: "m", Refused: refused}}}}
	}
	footer := func(m Model) string { s := screen(m); return s[len(s)-1] }
	m, _ := update(t, New(Options{Masters: 2, Start: func(int) tea.Cmd { return nil }}), probed(world()...), done(1, 0))
	if f := footer(m); strings.Contains(f, "local") {
		t.Errorf("nothing refused, yet %q", f)
	}
	m, _ = update(t, m, done(1, 1796))
	if f := footer(m); !strings.HasPrefix(f, "not probing 1796 servers at local addresses (--allow-local) | enter details") {
		t.Errorf("status line %q does not say what was refused", f)
	}
	m, _ = update(t, m, key("s"), done(1, 4))
	if f := footer(m); !strings.HasPrefix(f, "sorted by") {
		t.Errorf("said again: %q", f)
	}
	m, _ = update(t, m, key("down"))
	if f := footer(m); !strings.HasPrefix(f, "1800 local not probed") {
		t.Errorf("status line %q does not count them", f)
	}
	m, _ = update(t, m, key("r"), done(2, 3), key("down"))
	if f := footer(m); !strings.HasPrefix(f, "3 local not probed") {
		t.Errorf("after a refresh, status line %q", f)
	}
}

func TestModel_DoneSaysHowTheRunEnded(t *testing.T) {
	m, _ := update(t, New(Options{}), probed(world()...), DoneMsg{Gen: 1, Summary: discover.Summary{Took: 2500 * time.Millisecond}})
	if title := screen(m)[0]; !strings.Contains(title, "done in 2.5s") {
		t.Errorf("title %q does not say the run is done", title)
	}
	m, _ = update(t, New(Options{}), DoneMsg{Gen: 1})
	if got := strings.Join(screen(m), "\n"); !strings.Contains(got, "no server answered") {
		t.Errorf("an empty run's screen does not say so:\n%s", got)
	}
}

func TestModel_QuitKeys(t *testing.T) {
	for _, k := range []tea.KeyPressMsg{key("q"), {Code: 'c', Mod: tea.ModCtrl}} {
		_, cmd := update(t, New(Options{}), k)
		if cmd == nil {
			t.Errorf("%s: no command", k)
			continue
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s does not quit", k)
		}
	}
}

func TestParsePing(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "150": 150 * time.Millisecond, "12.5": 12500 * time.Microsecond,
		"150ms": 150 * time.Millisecond, "0.2s": 200 * time.Millisecond} {
		if got, err := parsePing(in); err != nil || got != want {
			t.Errorf("parsePing(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-5", "fast", "5 parsecs", "-1ms"} {
		if got, err := parsePing(in); err == nil {
			t.Errorf("parsePing(%q) = %v, want an error", in, got)
		}
	}
}
