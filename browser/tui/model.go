package tui

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/probe"
)

// EventsMsg carries the events of a discovery run that arrived since the
// last one, and the run's age. Gen is the run they belong to: events of
// a run the player has replaced by a refresh are dropped.
type EventsMsg struct {
	Gen     int
	Events  []discover.Event
	Elapsed time.Duration
}

// DoneMsg says a run has ended; Err is why it ended early, if it did.
type DoneMsg struct {
	Gen     int
	Summary discover.Summary
	Err     error
}

// LaunchedMsg says the game the player started has exited.
type LaunchedMsg struct{ Err error }

// Options configure a browser.
type Options struct {
	// Game is the game scout was asked for (its catalogue name): the
	// title, and the launch command used when a server names no mod.
	Game string
	// Masters is how many masters each run asks.
	Masters int
	// Filter and Order are the filter and order to start with (Order
	// one of browser.Orders; "" means ping).
	Filter browser.Filter
	Order  string
	// Commands start the games (see ConfigName); ConfigPath is where
	// they are configured, for the hint shown when a game has none.
	Commands   Commands
	ConfigPath string
	// Start begins run gen of the discovery; its events come back as
	// EventsMsg and DoneMsg carrying gen. Launch runs a game's command
	// line and answers LaunchedMsg when it exits. Either may be nil (the
	// key then does nothing but say so).
	Start  func(gen int) tea.Cmd
	Launch func(argv []string) tea.Cmd
}

// mode is what the screen shows.
type mode int

const (
	modeList mode = iota
	modeDetails
	modePrompt
	modeHelp
)

// prompt is a filter being typed: field names what it sets, and old is
// the filter to go back to on Esc (the list follows the typing).
type prompt struct {
	field string // "text", "map", "game", "ping"
	input []rune
	old   filters
}

// filters are what the player hides: browser's filter and a text
// searched in names, maps, addresses and player names.
type filters struct {
	browser.Filter
	Text string
}

// Model is the browser's state. Update returns the next state; as in any
// Bubble Tea model, the one it was called on is not used again (they
// share the results).
type Model struct {
	opt           Options
	width, height int
	mode          mode
	prompt        prompt

	gen     int
	results []probe.Result              // answered servers of this run, as they arrived
	index   map[netip.AddrPort]int      // results' positions
	masters map[netip.AddrPort][]string // the masters that listed each server
	done    *DoneMsg
	elapsed time.Duration

	listed, probed, answered, mastersDone int
	// refused counts the entries public masters listed at local
	// addresses or at their own, not probed (discover's netscope rule);
	// toldRefused: the browser said so once, in the status line.
	refused     int
	toldRefused bool

	filter  filters
	order   string
	shown   []probe.Result // results filtered and ordered
	cursor  int            // index in shown
	top     int            // first index of shown on screen
	chosen  netip.AddrPort // the server under the cursor once the player moved it; invalid: the first
	scroll  int            // first line of the details on screen
	status  string         // the last thing the browser has to say
	copied  []string       // addresses copied, in order
	quitted bool
}

// New returns a browser for the first run (generation 1); its Init
// starts the run.
func New(opt Options) Model {
	if opt.Order == "" {
		opt.Order = "ping"
	}
	m := Model{opt: opt, width: 80, height: 24, gen: 1, order: opt.Order,
		filter: filters{Filter: opt.Filter}}
	m.reset()
	return m
}

func (m *Model) reset() {
	m.results, m.shown = nil, nil
	m.index = map[netip.AddrPort]int{}
	m.masters = map[netip.AddrPort][]string{}
	m.listed, m.probed, m.answered, m.mastersDone, m.refused, m.elapsed = 0, 0, 0, 0, 0, 0
	m.done = nil
	m.cursor, m.top, m.chosen = 0, 0, netip.AddrPort{}
}

// Init starts the first run.
func (m Model) Init() tea.Cmd {
	if m.opt.Start == nil {
		return nil
	}
	return m.opt.Start(m.gen)
}

// Copied returns the addresses the player copied, for the shell to print
// when the browser ends (the fallback for terminals without OSC 52).
func (m Model) Copied() []string { return m.copied }

// Counts returns the servers the current run has listed and those that
// answered so far.
func (m Model) Counts() (listed, answered int) { return m.listed, m.answered }

// Done returns how the current run ended, false while it goes on.
func (m Model) Done() (DoneMsg, bool) {
	if m.done == nil {
		return DoneMsg{}, false
	}
	return *m.done, true
}

// Update applies msg.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 1), max(msg.Height, 1)
		m.follow()
	case EventsMsg:
		if msg.Gen == m.gen {
			m.events(msg)
		}
	case DoneMsg:
		if msg.Gen == m.gen {
			m.done = &msg
			m.refresh()
			if msg.Err != nil {
				m.status = "stopped: " + browser.Display(msg.Err.Error())
			}
		}
	case LaunchedMsg:
		if msg.Err != nil {
			m.status = "the game failed: " + browser.Display(msg.Err.Error())
		} else {
			m.status = "the game has exited"
		}
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) events(msg EventsMsg) {
	m.elapsed = msg.Elapsed
	for _, e := range msg.Events {
		switch e := e.(type) {
		case discover.Listed:
			if !e.Again {
				m.listed++
			}
			m.masters[e.Addr] = append(m.masters[e.Addr], e.Master)
		case discover.MasterDone:
			m.mastersDone++
			m.refused += e.Refused
			if m.refused > 0 && !m.toldRefused {
				m.toldRefused = true
				m.status = fmt.Sprintf("not probing %d servers at local addresses (--allow-local)", m.refused)
			}
		case discover.Probed:
			m.probed++
			if !e.Answered() {
				continue
			}
			m.answered++
			if i, ok := m.index[e.Addr]; ok {
				m.results[i] = e.Result
			} else {
				m.index[e.Addr] = len(m.results)
				m.results = append(m.results, e.Result)
			}
			for _, ms := range e.Masters {
				if !slices.Contains(m.masters[e.Addr], ms) {
					m.masters[e.Addr] = append(m.masters[e.Addr], ms)
				}
			}
		}
	}
	m.refresh()
}

// refresh rebuilds the list shown (filter and order) and keeps the cursor
// on the server the player chose.
func (m *Model) refresh() {
	m.shown = make([]probe.Result, 0, len(m.results))
	for _, r := range m.results {
		if m.filter.show(r) {
			m.shown = append(m.shown, r)
		}
	}
	browser.Sort(m.shown, m.order)
	m.cursor = 0
	if m.chosen.IsValid() {
		if i := slices.IndexFunc(m.shown, func(r probe.Result) bool { return r.Addr == m.chosen }); i >= 0 {
			m.cursor = i
		}
	}
	m.follow()
}

// show reports whether r passes the filters.
func (f filters) show(r probe.Result) bool {
	if !f.Filter.Show(r) {
		return false
	}
	if f.Text == "" {
		return true
	}
	t := strings.ToLower(f.Text)
	has := func(s string) bool { return strings.Contains(strings.ToLower(browser.NameFor(r.Game, s)), t) }
	if has(r.Name) || has(r.Map) || strings.Contains(r.Addr.String(), t) {
		return true
	}
	for _, p := range r.Players {
		if has(p.Name) {
			return true
		}
	}
	return false
}

// rows is how many servers fit on the screen: the lines less the title,
// the column header and the status line.
func (m *Model) rows() int { return max(m.height-3, 1) }

// follow scrolls the list so the cursor is on the screen.
func (m *Model) follow() {
	m.cursor = max(min(m.cursor, len(m.shown)-1), 0)
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+m.rows() {
		m.top = m.cursor - m.rows() + 1
	}
	m.top = max(min(m.top, len(m.shown)-m.rows()), 0)
}

// move puts the cursor at i and remembers the server there.
func (m *Model) move(i int) {
	if len(m.shown) == 0 {
		return
	}
	m.cursor = max(min(i, len(m.shown)-1), 0)
	m.chosen = m.shown[m.cursor].Addr
	m.follow()
}

// current is the server under the cursor.
func (m *Model) current() (probe.Result, bool) {
	if m.cursor < len(m.shown) {
		return m.shown[m.cursor], true
	}
	return probe.Result{}, false
}

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.status = "" // what the browser said is about the key before
	if k.String() == "ctrl+c" {
		m.quitted = true
		return m, tea.Quit
	}
	switch m.mode {
	case modePrompt:
		return m.promptKey(k)
	case modeHelp:
		m.mode = modeList
		return m, nil
	case modeDetails:
		switch k.String() {
		case "esc", "q", "enter", "backspace", "left", "h":
			m.mode = modeList
			return m, nil
		case "down", "j":
			m.scroll++
		case "up", "k":
			m.scroll--
		case "pgdown", "space", " ":
			m.scroll += m.height - 2
		case "pgup":
			m.scroll -= m.height - 2
		case "home", "g":
			m.scroll = 0
		default:
			return m.serverKey(k)
		}
		m.scroll = max(m.scroll, 0)
		return m, nil
	}
	switch k.String() {
	case "q":
		m.quitted = true
		return m, tea.Quit
	case "down", "j":
		m.move(m.cursor + 1)
	case "up", "k":
		m.move(m.cursor - 1)
	case "pgdown", "space", " ":
		m.move(m.cursor + m.rows())
	case "pgup":
		m.move(m.cursor - m.rows())
	case "home":
		m.move(0)
	case "end":
		m.move(len(m.shown) - 1)
	case "enter", "right", "l":
		if _, ok := m.current(); ok {
			m.mode, m.scroll = modeDetails, 0
		}
	case "s":
		i := slices.Index(browser.Orders, m.order)
		m.order = browser.Orders[(i+1)%len(browser.Orders)]
		m.status = "sorted by " + m.order
		m.refresh()
	case "e":
		m.filter.HideEmpty = !m.filter.HideEmpty
		m.refresh()
	case "f":
		m.filter.HideFull = !m.filter.HideFull
		m.refresh()
	case "/":
		m.ask("text")
	case "m":
		m.ask("map")
	case "g":
		m.ask("game")
	case "p":
		m.ask("ping")
	case "esc":
		m.filter = filters{}
		m.status = "filters cleared"
		m.refresh()
	case "r":
		return m.restart()
	case "?":
		m.mode = modeHelp
	default:
		return m.serverKey(k)
	}
	return m, nil
}

// serverKey handles the keys that act on the server under the cursor, in
// the list and in its details.
func (m Model) serverKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	r, ok := m.current()
	if !ok {
		return m, nil
	}
	addr := r.Addr.String()
	switch k.String() {
	case "y":
		m.copied = append(m.copied, addr)
		m.status = "copied " + addr + " (printed again on exit if the terminal keeps no clipboard)"
		return m, tea.SetClipboard(addr)
	case "c":
		argv, ok := m.opt.Commands.For(browser.GameName(r), m.opt.Game, addr)
		switch {
		case !ok:
			name := cmpOr(browser.Display(browser.GameName(r)), m.opt.Game)
			m.status = fmt.Sprintf("no command starts %s: add \"%s = COMMAND\" to %s", name, name, cmpOr(m.opt.ConfigPath, ConfigName))
		case m.opt.Launch == nil:
			m.status = "cannot start games here"
		default:
			m.status = "starting " + strings.Join(argv, " ")
			return m, m.opt.Launch(argv)
		}
	}
	return m, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// restart begins a new run, dropping the results of the current one.
func (m Model) restart() (tea.Model, tea.Cmd) {
	if m.opt.Start == nil {
		m.status = "cannot refresh here"
		return m, nil
	}
	m.gen++
	m.reset()
	m.status = "refreshing"
	return m, m.opt.Start(m.gen)
}

// ask opens the prompt for a filter field, filled with its value.
func (m *Model) ask(field string) {
	var v string
	switch field {
	case "text":
		v = m.filter.Text
	case "map":
		v = m.filter.Map
	case "game":
		v = m.filter.GameName
	case "ping":
		if m.filter.MaxPing > 0 {
			v = fmt.Sprint(m.filter.MaxPing.Milliseconds())
		}
	}
	m.mode = modePrompt
	m.prompt = prompt{field: field, input: []rune(v), old: m.filter}
}

func (m Model) promptKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.filter = m.prompt.old
		m.mode = modeList
		m.refresh()
		return m, nil
	case "enter":
		m.mode = modeList
		if err := m.setField(); err != nil {
			m.filter = m.prompt.old
			m.status = err.Error()
		}
		m.refresh()
		return m, nil
	case "backspace":
		if n := len(m.prompt.input); n > 0 {
			m.prompt.input = m.prompt.input[:n-1]
		}
	case "ctrl+u":
		m.prompt.input = nil
	default:
		if k.Text == "" || len(m.prompt.input) >= maxPrompt {
			return m, nil
		}
		m.prompt.input = append(m.prompt.input, []rune(browser.Display(k.Text))...)
	}
	if m.setField() == nil { // the list follows the typing; a bad number waits for Enter
		m.refresh()
	}
	return m, nil
}

// maxPrompt bounds what a prompt holds, in characters.
const maxPrompt = 64

// setField sets the prompt's field from its input.
func (m *Model) setField() error {
	v := strings.TrimSpace(string(m.prompt.input))
	switch m.prompt.field {
	case "text":
		m.filter.Text = v
	case "map":
		m.filter.Map = v
	case "game":
		m.filter.GameName = v
	case "ping":
		d, err := parsePing(v)
		if err != nil {
			return err
		}
		m.filter.MaxPing = d
	}
	return nil
}

// parsePing reads a max ping: milliseconds ("150") or a duration
// ("150ms", "0.2s"); "" or 0 is any.
func parsePing(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	var ms float64
	if _, err := fmt.Sscanf(s, "%g", &ms); err == nil && !strings.ContainsAny(s, "hmnsµu") {
		if ms < 0 {
			return 0, fmt.Errorf("max ping %q is negative", s)
		}
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("max ping %q: give milliseconds (150) or a duration (150ms)", s)
	}
	return d, nil
}

// Styles of the screen.
var (
	titleStyle    = lipgloss.NewStyle().Bold(true)
	headerStyle   = lipgloss.NewStyle().Bold(true).Underline(true)
	selectedStyle = lipgloss.NewStyle().Reverse(true)
	statusStyle   = lipgloss.NewStyle().Faint(true)
)

// View renders the screen: exactly height lines, none wider than width.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "scout: " + m.opt.Game
	return v
}

// Render is the screen's text (with styles).
func (m Model) Render() string {
	var lines []string
	switch m.mode {
	case modeDetails:
		lines = m.detailsLines()
	case modeHelp:
		lines = m.helpLines()
	default:
		lines = m.listLines()
	}
	for i, s := range lines {
		lines[i] = clipStyled(s, m.width)
	}
	return strings.Join(lines, "\n")
}

// clipStyled cuts a styled line to w cells.
func clipStyled(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	return browser.Clip(s, w)
}

func (m Model) listLines() []string {
	l := browser.LayoutFor(m.width)
	lines := []string{titleStyle.Render(browser.Clip(m.title(), m.width)), headerStyle.Render(l.Header(m.order))}
	end := min(m.top+m.rows(), len(m.shown))
	for i := m.top; i < end; i++ {
		row := l.Row(m.shown[i])
		if i == m.cursor {
			row = selectedStyle.Render(row)
		}
		lines = append(lines, row)
	}
	if len(m.shown) == 0 {
		switch {
		case len(m.results) > 0:
			lines = append(lines, "no server passes the filters (Esc clears them)")
		case m.done != nil:
			lines = append(lines, "no server answered (r asks again)")
		default:
			lines = append(lines, "asking the masters...")
		}
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = lines[:max(m.height-1, 0)]
	return append(lines, m.footer())
}

// title is the first line: the game and how the run stands, as many of
// its parts as fit, most important first.
func (m Model) title() string {
	state := fmt.Sprintf("%.1fs", m.elapsed.Seconds())
	if m.done != nil {
		state = fmt.Sprintf("done in %.1fs", m.done.Summary.Took.Seconds())
		if m.done.Err != nil {
			state = "stopped"
		}
	}
	return joinFit(m.width, "  ", "scout "+browser.Display(m.opt.Game), state, bar(m.probed, m.listed, 10),
		fmt.Sprintf("answered %d", m.answered), fmt.Sprintf("probed %d/%d", m.probed, m.listed),
		fmt.Sprintf("masters %d/%d", m.mastersDone, m.opt.Masters), fmt.Sprintf("shown %d", len(m.shown)))
}

// joinFit joins parts with sep, leaving out those after the first that
// would make the line wider than w.
func joinFit(w int, sep string, parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 && ansi.StringWidth(b.String())+len(sep)+ansi.StringWidth(p) > w {
			break
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p)
	}
	return b.String()
}

// bar renders done of all as a bar of width cells.
func bar(done, all, width int) string {
	fill := 0
	if all > 0 {
		fill = min(width*done/all, width)
	}
	return "[" + strings.Repeat("#", fill) + strings.Repeat(".", width-fill) + "]"
}

// footer is the last line: the prompt, else what the browser has to say
// and the filters, else the keys.
func (m Model) footer() string {
	if m.mode == modePrompt {
		label := map[string]string{"text": "find", "map": "map", "game": "game", "ping": "max ping (ms)"}[m.prompt.field]
		return label + ": " + string(m.prompt.input) + "_"
	}
	var parts []string
	if f := m.filter.describe(); f != "" {
		parts = append(parts, "filter: "+f)
	}
	if m.status != "" {
		parts = append(parts, m.status)
	} else if m.refused > 0 {
		parts = append(parts, fmt.Sprintf("%d local not probed", m.refused))
	}
	if m.mode == modeDetails {
		parts = append(parts, "esc back  y copy  c connect")
	} else {
		parts = append(parts, "enter details  s sort  / find  e f g m p filter  y copy  c connect  r refresh  ? help  q quit")
	}
	return statusStyle.Render(browser.Clip(strings.Join(parts, " | "), m.width))
}

// describe says which filters are on, "" when none is.
func (f filters) describe() string {
	var p []string
	if f.Text != "" {
		p = append(p, fmt.Sprintf("%q", f.Text))
	}
	if f.GameName != "" {
		p = append(p, "game "+f.GameName)
	}
	if f.Map != "" {
		p = append(p, "map ~"+f.Map)
	}
	if f.GameType != "" {
		p = append(p, "type "+f.GameType)
	}
	if f.MaxPing > 0 {
		p = append(p, "ping <= "+browser.Ping(f.MaxPing))
	}
	if f.HideEmpty {
		p = append(p, "not empty")
	}
	if f.HideFull {
		p = append(p, "not full")
	}
	return browser.Display(strings.Join(p, ", "))
}

// detailsLines show the server under the cursor: its summary, players and
// settings, scrolled.
func (m Model) detailsLines() []string {
	r, ok := m.current()
	if !ok {
		return m.listLines()
	}
	body := []string{
		"",
		fmt.Sprintf("address  %s", r.Addr),
		fmt.Sprintf("map      %s", browser.Display(r.Map)),
		fmt.Sprintf("players  %d/%d", r.NumPlayers, r.MaxPlayers),
		fmt.Sprintf("ping     %s", browser.Ping(r.RTT)),
		fmt.Sprintf("game     %s  type %s  protocol %s", browser.Display(cmpOr(browser.GameName(r), r.Game)), browser.GameType(r), browser.Display(r.Protocol)),
		fmt.Sprintf("masters  %s", browser.Display(strings.Join(m.masters[r.Addr], ", "))),
		"",
	}
	switch {
	case r.Players == nil:
		body = append(body, "players: the server did not send its list (run with --status)")
	case len(r.Players) == 0:
		body = append(body, "players: none")
	default:
		ps := slices.Clone(r.Players)
		slices.SortStableFunc(ps, func(a, b probe.Player) int { return b.Score - a.Score })
		nw := min(max(m.width-24, 16), 40)
		body = append(body, headerStyle.Render(browser.Fit("PLAYER", nw, false)+browser.Gap+browser.Fit("SCORE", 6, true)+browser.Gap+browser.Fit("PING", 6, true)))
		for _, p := range ps {
			ping := fmt.Sprint(p.Ping)
			if p.Ping == 0 {
				ping = "bot?"
			}
			body = append(body, browser.Fit(browser.NameFor(r.Game, p.Name), nw, false)+browser.Gap+browser.Fit(fmt.Sprint(p.Score), 6, true)+browser.Gap+browser.Fit(ping, 6, true))
		}
	}
	body = append(body, "", headerStyle.Render("SETTINGS"))
	info := slices.Concat(r.Info, r.Rules)
	kw := 0
	for _, p := range info {
		kw = max(kw, len(p.Key))
	}
	kw = min(kw, 24)
	for _, p := range info {
		body = append(body, browser.Fit(browser.Display(p.Key), kw, false)+browser.Gap+browser.Display(p.Value))
	}
	room := max(m.height-2, 1)
	scroll := max(min(m.scroll, len(body)-room), 0)
	lines := []string{titleStyle.Render(browser.Clip(browser.NameFor(r.Game, r.Name), m.width))}
	lines = append(lines, body[scroll:min(scroll+room, len(body))]...)
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = lines[:max(m.height-1, 0)]
	return append(lines, m.footer())
}

// keys is the help screen.
var keys = [][2]string{
	{"up/down, pgup/pgdn", "move"},
	{"enter", "the server's players and settings"},
	{"s", "sort by ping, players, name, map"},
	{"/", "find in names, maps, addresses and players"},
	{"g", "filter by game or mod"},
	{"m", "filter by map"},
	{"p", "max ping (ms)"},
	{"e / f", "hide empty / full servers"},
	{"esc", "clear the filters"},
	{"y", "copy the address (OSC 52; printed again on exit)"},
	{"c", "start the game on the server (" + ConfigName + ")"},
	{"r", "ask the masters again"},
	{"q, ctrl+c", "quit"},
}

func (m Model) helpLines() []string {
	lines := []string{titleStyle.Render("keys"), ""}
	for _, k := range keys {
		lines = append(lines, browser.Fit(k[0], 20, false)+browser.Gap+k[1])
	}
	lines = append(lines, "", "launch commands: "+cmpOr(m.opt.ConfigPath, ConfigName))
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = lines[:max(m.height-1, 0)]
	return append(lines, statusStyle.Render("any key: back"))
}
