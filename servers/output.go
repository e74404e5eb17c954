package servers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/probe"
)

// output shows events in the chosen mode: JSON lines, plain lines as
// servers answer (a pipe), or on a terminal a progress line and, at the
// end, the best servers that fit the screen. Its methods are called from
// one goroutine at a time (discover serialises events); on a terminal a
// ticker of its own redraws the progress line meanwhile, under mu.
type output struct {
	mu     sync.Mutex // the events' counts against the ticker's redraw
	opt    Config
	w      io.Writer
	enc    *json.Encoder
	height int            // the terminal's lines; 0 when w is no terminal
	width  int            // the terminal's columns
	held   []probe.Result // plain output held to the end: --sort, or a terminal
	headed bool           // plain output: the header is out
	began  time.Time
	drawn  time.Time // when the progress line was last drawn
	// stopDraw stops the ticker that redraws the progress line and
	// waits for it; nil when there is none.
	stopDraw func()
	tally    tally
	// mastersDone and mastersAsked count the masters whose list ended
	// and those asked.
	mastersDone, mastersAsked int
	ordering                  *OrderReport // --order adaptive: the summary's "order"
}

// tally counts the servers of a run by outcome. Listed is every distinct
// server listed; each probed one is answered, silent, unreachable or
// stopped (its probe cut short by the end of the run), and the others
// were not probed: Listed = Answered + Silent + Unreachable + Stopped +
// NotProbed, also when the run is interrupted.
type tally struct {
	Listed, Probed                         int
	Answered, Silent, Unreachable, Stopped int
}

// NotProbed is the servers listed whose probe never began.
func (t tally) NotProbed() int { return max(t.Listed-t.Probed, 0) }

// add counts one probe's end.
func (t *tally) add(r probe.Result) {
	t.Probed++
	switch {
	case r.Answered():
		t.Answered++
	case errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded):
		t.Stopped++
	case errors.Is(r.Err, probe.ErrUnreachable):
		t.Unreachable++
	default:
		t.Silent++
	}
}

// drawEvery is how often the progress line is redrawn: on events at most
// this often, and by a ticker while none comes, so the line never keeps
// stale counts (a burst's last answers, then silence while the silent
// servers' probes wait for their timeouts).
const drawEvery = 100 * time.Millisecond

func newOutput(opt Config, w io.Writer) *output {
	o := &output{opt: opt, w: w}
	if opt.JSON {
		o.enc = json.NewEncoder(w)
		o.enc.SetEscapeHTML(false)
		return o
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		o.width, o.height = 80, 24
		if w, h, err := term.GetSize(int(f.Fd())); err == nil && w > 0 && h > 0 {
			o.width, o.height = w, h
		}
	}
	return o
}

// start marks the run's beginning and, on a terminal, starts redrawing
// the progress line every drawEvery until finish.
func (o *output) start() {
	o.began = time.Now()
	if o.height == 0 {
		return
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(drawEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				o.mu.Lock()
				if time.Since(o.drawn) >= drawEvery {
					o.drawn = time.Now()
					o.progress()
				}
				o.mu.Unlock()
			}
		}
	}()
	o.stopDraw = func() { close(done); <-stopped }
}

func (o *output) event(e discover.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e := e.(type) {
	case discover.Listed:
		if !e.Again {
			o.tally.Listed++
		}
	case discover.MasterDone:
		o.mastersDone++
	case discover.Probed:
		o.tally.add(e.Result)
		o.server(e.Server)
	}
	if o.height > 0 && time.Since(o.drawn) >= drawEvery {
		o.drawn = time.Now()
		o.progress()
	}
}

// progress redraws the terminal's progress line in place: one line,
// clipped to the width, so it never wraps.
func (o *output) progress() {
	t := o.tally
	line := fmt.Sprintf("masters %d/%d  listed %d  probed %d  answered %d  %.1fs",
		o.mastersDone, o.mastersAsked, t.Listed, t.Probed, t.Answered, time.Since(o.began).Seconds())
	if len(line) >= o.width {
		line = line[:max(o.width-1, 0)]
	}
	fmt.Fprintf(o.w, "\r%s\x1b[K", line)
}

func (o *output) server(s discover.Server) {
	switch {
	case o.enc != nil:
		if s.Answered() && !o.opt.Filter.Show(s.Result) {
			return
		}
		o.enc.Encode(s.JSON())
	case !o.opt.Filter.Show(s.Result):
	case o.opt.Sort != "" || o.height > 0:
		o.held = append(o.held, s.Result)
	default:
		if !o.headed {
			o.headed = true
			o.header()
		}
		o.line(s.Result)
	}
}

// header prints the column titles of plain output: on a terminal, the
// columns that fit its width (browser.LayoutFor); in a pipe, all of them.
func (o *output) header() {
	if o.width > 0 {
		fmt.Fprintln(o.w, browser.LayoutFor(o.width-1).Header(cmp.Or(o.opt.Sort, "ping")))
		return
	}
	fmt.Fprintln(o.w, browser.Header())
}

// line prints a server in plain output, its players under it with
// --status.
func (o *output) line(r probe.Result) {
	if o.width > 0 {
		fmt.Fprintln(o.w, browser.LayoutFor(o.width-1).Row(r))
	} else {
		fmt.Fprintln(o.w, browser.Line(r))
	}
	if !o.opt.Status {
		return
	}
	for _, p := range r.Players {
		o.println(fmt.Sprintf("    %-32s  score %4d  ping %3d", browser.NameFor(r.Game, p.Name), p.Score, p.Ping))
	}
}

// println prints a line; on a terminal, a line wider than the terminal
// is broken between words, so the terminal wraps none.
func (o *output) println(s string) {
	if o.width > 0 {
		s = wrapWords(s, o.width-1)
	}
	fmt.Fprintln(o.w, s)
}

// wrapWords breaks s into lines of at most w cells between words, a word
// wider than w clipped.
func wrapWords(s string, w int) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
			line += " " + word
		default:
			lines = append(lines, browser.Clip(line, w))
			line = "  " + word
		}
	}
	return strings.Join(append(lines, browser.Clip(line, w)), "\n")
}

func (o *output) finish(sum discover.Summary) {
	if o.stopDraw != nil {
		o.stopDraw()
		o.stopDraw = nil
	}
	if o.enc != nil {
		o.enc.Encode(summaryJSON(sum, o))
		return
	}
	order := cmp.Or(o.opt.Sort, "ping")
	browser.Sort(o.held, order)
	trailer := o.trailer(sum)
	show := o.held
	if o.height > 0 {
		// A terminal keeps the best servers on the screen: as many as
		// fit with the header, the line that counts the others, the
		// masters' lines, the summary and the shell's prompt.
		fmt.Fprint(o.w, "\r\x1b[K")
		room := o.height - 3 - len(trailer)
		n := 0
		for n < len(o.held) {
			lines := 1
			if o.opt.Status {
				lines += len(o.held[n].Players)
			}
			if room -= lines; room < 0 && n > 0 {
				break
			}
			n++
		}
		show = o.held[:n]
	}
	if len(show) > 0 {
		o.header()
	}
	for _, r := range show {
		o.line(r)
	}
	if more := len(o.held) - len(show); more > 0 {
		o.println(fmt.Sprintf("... and %d more, by %s (all of them: --json, or pipe the output)", more, order))
	}
	for _, l := range trailer {
		fmt.Fprintln(o.w, l)
	}
}

// trailer is the end of plain output: how each master did, and the
// totals, as lines that fit a terminal (println's).
func (o *output) trailer(sum discover.Summary) []string {
	var out []string
	add := func(s string) {
		if o.width > 0 {
			s = wrapWords(s, o.width-1)
		}
		out = append(out, strings.Split(s, "\n")...)
	}
	for _, m := range sum.Masters {
		line := fmt.Sprintf("master %s: %d listed (%d new), %s", browser.Display(m.Name), m.Listed, m.New, m.End)
		if m.Error != "" {
			line += ": " + browser.Display(m.Error)
		}
		add(line)
	}
	t, c := o.tally, sum.Probe
	line := fmt.Sprintf("%d servers listed: %d answered, %d silent, %d unreachable, %d stopped, %d not probed",
		t.Listed, t.Answered, t.Silent, t.Unreachable, t.Stopped, t.NotProbed())
	refused := 0
	for _, n := range sum.Refused {
		refused += n
	}
	if refused > 0 {
		line += fmt.Sprintf("; %d at local addresses refused", refused)
	}
	add(line)
	add(fmt.Sprintf("%d probes (%d retries), %d bytes out, %d flows; %.2fs",
		c.Sent, c.Retries, c.BytesOut, c.Destinations, sum.Took.Seconds()))
	return out
}

// summaryOut is the final {"type":"summary"} line of --json.
type summaryOut struct {
	Type          string                  `json:"type"`
	Listed        int                     `json:"listed"`
	Probed        int                     `json:"probed"`
	Answered      int                     `json:"answered"`
	Silent        int                     `json:"silent"`
	Unreachable   int                     `json:"unreachable"` // ended by an ICMP destination unreachable (Linux)
	Stopped       int                     `json:"stopped"`     // probes cut short by the end of the run (Ctrl-C, --max-time)
	NotProbed     int                     `json:"not_probed"`  // listed, never probed: listed = answered + silent + unreachable + stopped + not_probed
	Refused       map[string]int          `json:"refused"`     // entries of public masters at local addresses, by reason, not probed nor counted in listed
	Probes        int                     `json:"probes"`
	Retries       int                     `json:"retries"`
	BytesOut      int64                   `json:"bytes_out"`
	BytesIn       int64                   `json:"bytes_in"`
	Flows         int                     `json:"flows"`
	PeakInFlight  int                     `json:"peak_in_flight"`
	Late          int                     `json:"late"`
	Unknown       int                     `json:"unknown"`
	KernelStamped int                     `json:"kernel_stamped"`
	MasterQueries int                     `json:"master_queries"`
	MasterBytes   int64                   `json:"master_bytes_out"`
	Stray         int                     `json:"master_stray"`
	ListsMs       float64                 `json:"lists_ms"`
	FirstMs       float64                 `json:"first_result_ms"`
	TookMs        float64                 `json:"took_ms"`
	Masters       []discover.MasterReport `json:"masters"`
	Order         *OrderReport            `json:"order,omitempty"`
	Pace          *paceOut                `json:"pace,omitempty"`
}

// paceOut is what the link-paced default did (probe.Counts.Pace*).
type paceOut struct {
	Rate        float64 `json:"rate"`
	PeakRate    float64 `json:"peak_rate"`
	Cuts        int     `json:"cuts"`
	CapacityBps float64 `json:"capacity_bps"`
	// TrainRate is the probes per second the packet trains measured,
	// TrainSends their sends beyond each train's first.
	TrainRate  float64 `json:"train_rate"`
	TrainSends int     `json:"train_sends"`
}

func summaryJSON(s discover.Summary, o *output) summaryOut {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	c := s.Probe
	t := o.tally
	j := summaryOut{Type: "summary", Listed: t.Listed, Probed: t.Probed, Answered: t.Answered, Silent: t.Silent, Unreachable: t.Unreachable,
		Stopped: t.Stopped, NotProbed: t.NotProbed(), Refused: s.Refused,
		Probes: c.Sent, Retries: c.Retries, BytesOut: c.BytesOut, BytesIn: c.BytesIn, Flows: c.Destinations,
		PeakInFlight: c.PeakInFlight, Late: c.Late, Unknown: c.Unknown, KernelStamped: c.KernelStamped,
		MasterQueries: s.MasterQueries, MasterBytes: s.MasterBytesOut, Stray: s.Stray,
		ListsMs: ms(s.ListsTook), FirstMs: ms(s.FirstResult), TookMs: ms(s.Took), Masters: s.Masters, Order: o.ordering}
	if j.Masters == nil {
		j.Masters = []discover.MasterReport{}
	}
	if j.Refused == nil {
		j.Refused = map[string]int{}
	}
	if c.PacePeakRate > 0 {
		j.Pace = &paceOut{Rate: c.PaceRate, PeakRate: c.PacePeakRate, Cuts: c.PaceCuts, CapacityBps: c.PaceCapacity,
			TrainRate: c.PaceTrainRate, TrainSends: c.PaceTrainSends}
	}
	return j
}
