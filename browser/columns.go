package browser

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/scout-discovery/scout/probe"
)

// A column of a server list that fits a terminal's width. Columns are
// laid out left to right in the order of columns; when the terminal is
// too narrow for all of them, the one with the largest drop goes first.
type column struct {
	title string
	width int // cells; the name column's least width, since it takes what is left
	right bool
	drop  int // 0: never dropped; the larger, the sooner
	cell  func(r probe.Result) string
}

// nameColumn is the index of the column that takes the spare width.
const nameColumn = 0

// Gap is the space between two columns.
const Gap = "  "

// maxNameWidth bounds the name column on a wide terminal: a longer name
// is rare, and the space is better left to the address.
const maxNameWidth = 48

var columns = []column{
	{title: "NAME", width: 16, cell: func(r probe.Result) string { return NameFor(r.Game, r.Name) }},
	{title: "MAP", width: 14, drop: 3, cell: func(r probe.Result) string { return Display(r.Map) }},
	{title: "PLAYERS", width: 8, right: true, drop: 0, cell: func(r probe.Result) string {
		return strconv.Itoa(r.NumPlayers) + "/" + strconv.Itoa(r.MaxPlayers)
	}},
	{title: "PING", width: 7, right: true, cell: func(r probe.Result) string { return Ping(r.RTT) }},
	{title: "ADDRESS", width: 21, drop: 4, cell: func(r probe.Result) string { return r.Addr.String() }},
	{title: "GAME", width: 10, drop: 5, cell: func(r probe.Result) string { return Display(GameName(r)) }},
	{title: "TYPE", width: 12, drop: 6, cell: func(r probe.Result) string { return GameType(r) }},
}

// sortColumn is the column each order sorts by.
var sortColumn = map[string]string{"ping": "PING", "players": "PLAYERS", "name": "NAME", "map": "MAP"}

// Layout is the columns shown at a width and the width of each.
type Layout struct {
	cols   []column
	widths []int
}

// LayoutFor fits columns into width cells: it drops columns by priority
// until the least widths fit, then gives the name column what is left (up
// to maxNameWidth). The widths and gaps add up to at most width.
func LayoutFor(width int) Layout {
	keep := make([]bool, len(columns))
	for i := range keep {
		keep[i] = true
	}
	need := func() int {
		n, k := 0, 0
		for i, c := range columns {
			if keep[i] {
				n += c.width
				k++
			}
		}
		return n + (k-1)*len(Gap)
	}
	for need() > width {
		worst := -1
		for i, c := range columns {
			if keep[i] && c.drop > 0 && (worst < 0 || c.drop > columns[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break // only the columns that are never dropped are left: they are clipped
		}
		keep[worst] = false
	}
	var l Layout
	spare := max(width-need(), 0)
	for i, c := range columns {
		if !keep[i] {
			continue
		}
		w := c.width
		if i == nameColumn {
			w += min(spare, maxNameWidth-c.width)
		}
		l.cols = append(l.cols, c)
		l.widths = append(l.widths, w)
	}
	return l
}

// Header renders the column titles, marking the one the list is sorted by.
func (l Layout) Header(order string) string {
	cells := make([]string, len(l.cols))
	for i, c := range l.cols {
		t := c.title
		if sortColumn[order] == c.title {
			t += "*"
		}
		cells[i] = Fit(t, l.widths[i], c.right)
	}
	return strings.Join(cells, Gap)
}

// Row renders one server.
func (l Layout) Row(r probe.Result) string {
	cells := make([]string, len(l.cols))
	for i, c := range l.cols {
		cells[i] = Fit(c.cell(r), l.widths[i], c.right)
	}
	return strings.Join(cells, Gap)
}

// Fit clips s to w cells, marking a cut with '~', and pads it to exactly
// w cells, on the left when right is set. s must be free of control
// characters (browser.Display).
func Fit(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "~")
	}
	pad := strings.Repeat(" ", max(w-ansi.StringWidth(s), 0))
	if right {
		return pad + s
	}
	return s + pad
}

// Clip cuts a line to w cells; a line already within w is kept as it is.
func Clip(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "~")
}
