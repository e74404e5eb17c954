package browser

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/scout-discovery/scout/probe"
)

// Progress is where a discovery stands.
type Progress struct {
	Listed   int // servers the masters listed (distinct)
	Probed   int // servers with a result
	Answered int
	Masters  int // masters whose list has ended
	Of       int // masters asked
	Elapsed  time.Duration
}

// barWidth is the width of the progress bar in cells.
const barWidth = 30

// Bar renders p as one line: a bar of probed over listed, then counts.
func (p Progress) Bar() string {
	fill := 0
	if p.Listed > 0 {
		fill = min(barWidth*p.Probed/p.Listed, barWidth)
	}
	return fmt.Sprintf("[%s%s] masters %d/%d  listed %d  probed %d  answered %d  %.1fs",
		strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill),
		p.Masters, p.Of, p.Listed, p.Probed, p.Answered, p.Elapsed.Seconds())
}

// Live is a table redrawn in place on a terminal (ANSI cursor movement):
// the progress bar, the header, then as many servers as fit, in order.
// It is used by one goroutine.
type Live struct {
	w      io.Writer
	rows   int // lines of the terminal the table may use
	drawn  int // lines drawn by the last frame
	filter Filter
	order  string
	rs     []probe.Result
}

// NewLive returns a live table on w of height lines.
func NewLive(w io.Writer, height int, f Filter, order string) *Live {
	return &Live{w: w, rows: max(height, 4), filter: f, order: order}
}

// Add records a result; it shows at the next Draw if the filter passes it.
func (l *Live) Add(r probe.Result) {
	if l.filter.Show(r) {
		l.rs = append(l.rs, r)
	}
}

// Results returns the results shown, in order.
func (l *Live) Results() []probe.Result {
	Sort(l.rs, l.order)
	return l.rs
}

// Draw replaces the last frame with the current one.
func (l *Live) Draw(p Progress) {
	var b strings.Builder
	if l.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", l.drawn) // up to the first line of the last frame
	}
	b.WriteString("\x1b[J") // clear to the end of the screen
	lines := []string{p.Bar(), Header()}
	rs := l.Results()
	room := l.rows - len(lines) - 1
	for i, r := range rs {
		if i == room && len(rs) > room {
			lines = append(lines, fmt.Sprintf("... %d more", len(rs)-room))
			break
		}
		lines = append(lines, Line(r))
	}
	for _, s := range lines {
		b.WriteString(s)
		b.WriteString("\x1b[K\n")
	}
	l.drawn = len(lines)
	io.WriteString(l.w, b.String())
}

// Final replaces the last frame with every result, then the bar.
func (l *Live) Final(p Progress) {
	var b strings.Builder
	if l.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", l.drawn)
	}
	b.WriteString(Header() + "\n")
	for _, r := range l.Results() {
		b.WriteString(Line(r) + "\n")
	}
	b.WriteString(p.Bar() + "\n")
	l.drawn = 0
	io.WriteString(l.w, b.String())
}
