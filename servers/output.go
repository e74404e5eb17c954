package servers

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/probe"
)

// output shows events in the chosen mode. Its methods are called
// from one goroutine at a time (discover serialises events).
type output struct {
	opt          Config
	w            io.Writer
	enc          *json.Encoder
	live         *browser.Live
	plain        []probe.Result // plain output with --sort: held to the end
	headed       bool           // plain output: the header is out
	began        time.Time
	lastDraw     time.Time
	listed       int
	probed       int
	answered     int
	mastersDone  int
	mastersAsked int
	ordering     *OrderReport // --order adaptive: the summary's "order"
}

// drawEvery limits the live table's redraws.
const drawEvery = 100 * time.Millisecond

func newOutput(opt Config, w io.Writer) *output {
	o := &output{opt: opt, w: w}
	if opt.JSON {
		o.enc = json.NewEncoder(w)
		o.enc.SetEscapeHTML(false)
		return o
	}
	live := opt.Live == "on"
	height := 24
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		live = live || opt.Live == "auto" || opt.Live == ""
		if _, h, err := term.GetSize(int(f.Fd())); err == nil {
			height = h
		}
	}
	if live {
		order := opt.Sort
		if order == "" {
			order = "ping"
		}
		o.live = browser.NewLive(w, height-1, opt.Filter, order)
	}
	return o
}

func (o *output) start() { o.began = time.Now() }

func (o *output) progress() browser.Progress {
	return browser.Progress{Listed: o.listed, Probed: o.probed, Answered: o.answered,
		Masters: o.mastersDone, Of: o.mastersAsked, Elapsed: time.Since(o.began)}
}

func (o *output) event(e discover.Event) {
	switch e := e.(type) {
	case discover.Listed:
		if !e.Again {
			o.listed++
		}
	case discover.MasterDone:
		o.mastersDone++
	case discover.Probed:
		o.probed++
		if e.Answered() {
			o.answered++
		}
		o.server(e.Server)
	}
	if o.live != nil && time.Since(o.lastDraw) >= drawEvery {
		o.live.Draw(o.progress())
		o.lastDraw = time.Now()
	}
}

func (o *output) server(s discover.Server) {
	switch {
	case o.enc != nil:
		if s.Answered() && !o.opt.Filter.Show(s.Result) {
			return
		}
		o.enc.Encode(s.JSON())
	case o.live != nil:
		o.live.Add(s.Result)
	case !o.opt.Filter.Show(s.Result):
	case o.opt.Sort != "":
		o.plain = append(o.plain, s.Result)
	default:
		if !o.headed {
			o.headed = true
			fmt.Fprintln(o.w, browser.Header())
		}
		o.line(s.Result)
	}
}

// line prints a server in plain output, its players under it with
// --status.
func (o *output) line(r probe.Result) {
	fmt.Fprintln(o.w, browser.Line(r))
	if !o.opt.Status {
		return
	}
	for _, p := range r.Players {
		fmt.Fprintf(o.w, "    %-32s  score %4d  ping %3d\n", browser.Name(p.Name), p.Score, p.Ping)
	}
}

func (o *output) finish(sum discover.Summary) {
	switch {
	case o.enc != nil:
		o.enc.Encode(summaryJSON(sum, o))
	case o.live != nil:
		o.live.Final(o.progress())
		o.masterLines(sum)
	default:
		if o.opt.Sort != "" {
			browser.Sort(o.plain, o.opt.Sort)
			if len(o.plain) > 0 {
				fmt.Fprintln(o.w, browser.Header())
			}
			for _, r := range o.plain {
				o.line(r)
			}
		}
		o.masterLines(sum)
	}
}

// masterLines prints how each master did, and the totals.
func (o *output) masterLines(sum discover.Summary) {
	for _, m := range sum.Masters {
		line := fmt.Sprintf("master %s: %d listed (%d new), %s", browser.Display(m.Name), m.Listed, m.New, m.End)
		if m.Error != "" {
			line += ": " + browser.Display(m.Error)
		}
		fmt.Fprintln(o.w, line)
	}
	c := sum.Probe
	fmt.Fprintf(o.w, "%d servers listed, %d probed, %d answered, %d silent, %d unreachable; %d probes (%d retries), %d bytes out, %d flows; %.2fs\n",
		sum.Listed, o.probed, o.answered, c.Silent, c.Unreachable, c.Sent, c.Retries, c.BytesOut, c.Destinations, sum.Took.Seconds())
}

// summaryOut is the final {"type":"summary"} line of --json.
type summaryOut struct {
	Type          string                  `json:"type"`
	Listed        int                     `json:"listed"`
	Probed        int                     `json:"probed"`
	Answered      int                     `json:"answered"`
	Silent        int                     `json:"silent"`
	Unreachable   int                     `json:"unreachable"` // ended by an ICMP destination unreachable (Linux)
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
	j := summaryOut{Type: "summary", Listed: s.Listed, Probed: o.probed, Answered: o.answered, Silent: c.Silent, Unreachable: c.Unreachable,
		Probes: c.Sent, Retries: c.Retries, BytesOut: c.BytesOut, BytesIn: c.BytesIn, Flows: c.Destinations,
		PeakInFlight: c.PeakInFlight, Late: c.Late, Unknown: c.Unknown, KernelStamped: c.KernelStamped,
		MasterQueries: s.MasterQueries, MasterBytes: s.MasterBytesOut, Stray: s.Stray,
		ListsMs: ms(s.ListsTook), FirstMs: ms(s.FirstResult), TookMs: ms(s.Took), Masters: s.Masters, Order: o.ordering}
	if j.Masters == nil {
		j.Masters = []discover.MasterReport{}
	}
	if c.PacePeakRate > 0 {
		j.Pace = &paceOut{Rate: c.PaceRate, PeakRate: c.PacePeakRate, Cuts: c.PaceCuts, CapacityBps: c.PaceCapacity,
			TrainRate: c.PaceTrainRate, TrainSends: c.PaceTrainSends}
	}
	return j
}
