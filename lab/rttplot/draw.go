package rttplot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// rttStop is the paper's name for the threshold. The zero-width space keeps
// Liberation Sans from kerning the "s" into the "T" (it does at these sizes;
// "RTTbottom" has no such pair); unkern does the same for any text.
const rttStop = "RTT\u200bstop"

// unkern puts a zero-width space between every "T" and "s" of text (the
// caption's "RTTstop", "landmark RTTs"), which Liberation Sans kerns into
// each other at these sizes.
func unkern(text string) string { return strings.ReplaceAll(text, "Ts", "T\u200bs") }

// legendWidthPx is the width of the legend column in a default-sized
// SideBySide chart.
const legendWidthPx = 240

// face is the typeface of every text: Liberation Sans, which ships with
// gonum/plot and is metric-compatible with Arial, so an SVG viewer that lacks
// it lays the text out the same way.
var face = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(face, size), Handler: plot.DefaultTextHandler}
}

// hue is a series' colour and its darker shade, for lines and labels.
type hue struct{ light, dark color.NRGBA }

// hues are picked to stay apart for colour-blind readers (Okabe-Ito).
var hues = [...]hue{
	{color.NRGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}, color.NRGBA{R: 0x00, G: 0x3f, B: 0x66, A: 0xff}}, // blue
	{color.NRGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}, color.NRGBA{R: 0xa3, G: 0x4a, B: 0x00, A: 0xff}}, // orange
	{color.NRGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff}, color.NRGBA{R: 0x00, G: 0x5c, B: 0x43, A: 0xff}}, // green
	{color.NRGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff}, color.NRGBA{R: 0x7d, G: 0x2e, B: 0x5c, A: 0xff}}, // purple
}

func hueOf(i int) hue { return hues[i%len(hues)] }

// alpha returns c with opacity a.
func alpha(c color.NRGBA, a uint8) color.NRGBA { c.A = a; return c }

// axes are the ranges every panel shares: seconds and milliseconds.
type axes struct {
	xmax    float64 // seconds
	ymax    float64 // milliseconds
	clipped bool    // some answered RTT is above ymax
}

func (c *Chart) axes() axes {
	var last, top time.Duration
	for _, s := range c.Series {
		last = max(last, s.StopAt)
		for _, p := range s.Probes {
			last = max(last, p.At)
			if p.Answered {
				top = max(top, p.RTT)
			}
		}
		for _, b := range s.Bottom {
			last = max(last, b.At)
		}
	}
	a := axes{xmax: last.Seconds() * 1.04}
	if a.xmax <= 0 {
		a.xmax = 1
	}
	maxRTT := c.MaxRTT
	if maxRTT == 0 {
		maxRTT = max(top, c.StopRTT*3/2, 100*time.Millisecond)
		const step = 100 * time.Millisecond
		maxRTT = (maxRTT + step - 1) / step * step
	}
	a.ymax = ms(maxRTT)
	a.clipped = top > maxRTT
	return a
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtMs formats an RTT threshold: "200 ms", "12.5 ms".
func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(ms(d), 'f', -1, 64) + " ms"
}

// fmtSec formats a time on the x axis: "14.2 s".
func fmtSec(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// ticks returns a Ticker with labelled ticks at a round step (1, 2, 2.5
// or 5 times a power of ten) that gives at most max of them in the range, and
// an unlabelled one half way between. When clipped, the tick at the top
// of the range is labelled "≥" its value: values above it were pinned there.
func ticks(maxTicks int, clipped bool) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		step := 1.0
		if span := hi - lo; span > 0 {
			mag := math.Pow(10, math.Floor(math.Log10(span/float64(maxTicks))))
			for _, m := range []float64{1, 2, 2.5, 5, 10} {
				step = m * mag
				if span/step <= float64(maxTicks) {
					break
				}
			}
		}
		var ts []plot.Tick
		first := math.Ceil(lo/step-1e-9) * step
		for i := 0; ; i++ {
			v := first + float64(i)*step
			if v > hi+step*1e-9 {
				break
			}
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			if m := v + step/2; m < hi {
				ts = append(ts, plot.Tick{Value: m})
			}
		}
		if clipped {
			label := "≥" + strconv.FormatFloat(hi, 'f', -1, 64)
			if n := len(ts); n > 0 && math.Abs(ts[n-1].Value-hi) < step*1e-9 {
				ts[n-1].Label = label
			} else {
				ts = append(ts, plot.Tick{Value: hi, Label: label})
			}
		}
		return ts
	})
}

// panel makes an empty plot with the chart's axes and style.
func (a axes) panel(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle = textStyle(12, color.Black)
	p.Title.TextStyle.XAlign, p.Title.TextStyle.YAlign = draw.XCenter, draw.YTop
	p.Title.Padding = vg.Points(4)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle = textStyle(11, color.Black)
		ax.Label.TextStyle.XAlign = draw.XCenter
		ax.Tick.Label = textStyle(9.5, color.Black)
		ax.Padding = 0
		ax.Tick.Length = vg.Points(4)
	}
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Label.Text = "time since discovery started (s)"
	p.Y.Label.Text = "RTT (ms)"
	p.X.Min, p.X.Max = 0, a.xmax
	p.Y.Min, p.Y.Max = 0, a.ymax
	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: color.Gray{Y: 0xe4}, Width: vg.Points(0.5)}
	grid.Horizontal = grid.Vertical
	p.Add(grid)
	return p
}

// layers collects the plotters of a panel in drawing order: probes under
// lines, lines under labels.
type layers struct{ dots, lines, notes []plot.Plotter }

func (l *layers) addTo(p *plot.Plot) {
	p.Add(l.dots...)
	p.Add(l.lines...)
	p.Add(l.notes...)
}

// radius picks a marker size that keeps a dense run readable.
func radius(n int) vg.Length {
	switch {
	case n <= 2000:
		return vg.Points(1.5)
	case n <= 10000:
		return vg.Points(1.1)
	}
	return vg.Points(0.8)
}

// accent is the size of the markers that stand out (calibration and split
// probes, RTTs above the axis): large while there are few of them, smaller
// when there are so many that large ones would merge into a blot.
func accent(n int) vg.Length {
	switch {
	case n <= 500:
		return vg.Points(2.2)
	case n <= 3000:
		return vg.Points(1.6)
	}
	return vg.Points(1.2)
}

// series adds series s, the i-th of the chart, to l and its legend entries
// to leg. stops counts the auto-stop labels already in the panel, so that
// they do not overlap.
func (a axes) series(l *layers, leg *legend, s Series, i int, stops *int) {
	h := hueOf(i)
	var byPhase [4][]xy
	var lost, over []xy
	for _, p := range s.Probes {
		x := p.At.Seconds()
		switch {
		case !p.Answered:
			lost = append(lost, xy{x, a.ymax})
		case ms(p.RTT) > a.ymax:
			over = append(over, xy{x, a.ymax})
		case int(p.Phase) < len(byPhase):
			byPhase[p.Phase] = append(byPhase[p.Phase], xy{x, ms(p.RTT)})
		}
	}
	r := radius(len(s.Probes))
	name := s.Name
	if name == "" {
		name = fmt.Sprintf("series %d", i+1)
	}
	add := func(pts []xy, sh shape, r vg.Length, c color.Color, what, key string) {
		if len(pts) == 0 {
			return
		}
		m := &marks{pts: pts, shape: sh, r: r, color: c}
		l.dots = append(l.dots, m)
		leg.addKeyed(fmt.Sprintf("%s: %s (%d)", name, what, len(pts)), m, key, &marks{shape: sh, r: r, color: keyInk})
	}
	add(byPhase[Conventional], disc, r, alpha(h.light, 0xb0), "probes", "probe")
	add(byPhase[Reordered], disc, r, alpha(h.light, 0xb0), "re-ordered probes", "probe")
	add(byPhase[Calibrate], triangle, accent(len(byPhase[Calibrate])), h.dark, "calibration probes", "calibration probe")
	add(byPhase[Split], diamond, accent(len(byPhase[Split])), h.dark, "split probes", "split probe")
	add(over, caret, accent(len(over)), h.dark, "RTT above axis, at top", "RTT above the axis, at top")
	add(lost, cross, max(r, vg.Points(1.6)), alpha(h.dark, 0x90), "no reply, at top", "no reply, at top")

	if len(s.Bottom) > 0 {
		pts := make([]xy, len(s.Bottom))
		for j, b := range s.Bottom {
			pts[j] = xy{b.At.Seconds(), min(ms(b.RTT), a.ymax)}
		}
		line := &polyline{pts: pts, steps: true, style: draw.LineStyle{Color: h.dark, Width: vg.Points(1.6)}}
		l.lines = append(l.lines, line)
		leg.addKeyed(name+": RTTbottom", line, "RTTbottom", &polyline{style: draw.LineStyle{Color: keyInk, Width: line.style.Width}})
	}
	if s.StopAt > 0 {
		x := s.StopAt.Seconds()
		line := &polyline{
			pts:   []xy{{x, 0}, {x, a.ymax}},
			style: draw.LineStyle{Color: h.dark, Width: vg.Points(1.6), Dashes: []vg.Length{vg.Points(6), vg.Points(2)}},
		}
		l.lines = append(l.lines, line)
		keyLine := &polyline{style: line.style}
		keyLine.style.Color = keyInk
		leg.addKeyed(name+": auto-stop at "+fmtSec(s.StopAt), line, "auto-stop", keyLine)
		sty := textStyle(10, h.dark)
		sty.YAlign = draw.YTop
		dx := vg.Points(4)
		if x > 0.75*a.xmax {
			sty.XAlign, dx = draw.XRight, -dx
		}
		dy := -vg.Points(4) - vg.Length(*stops)*vg.Points(14)
		*stops++
		l.notes = append(l.notes, &note{x: x, y: a.ymax, dx: dx, dy: dy, text: "auto-stop " + fmtSec(s.StopAt), style: sty})
	}
	a.marks(l, leg, s.Marks, h)
}

// marks adds a series' marks to l: a dotted line each, labelled at the
// foot of the panel (stacked upwards), and their legend entries.
func (a axes) marks(l *layers, leg *legend, ms []Mark, h hue) {
	n := 0
	for _, m := range ms {
		if m.At <= 0 {
			continue
		}
		x := m.At.Seconds()
		line := &polyline{
			pts:   []xy{{x, 0}, {x, a.ymax}},
			style: draw.LineStyle{Color: h.dark, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(1.5), vg.Points(2)}},
		}
		l.lines = append(l.lines, line)
		key := m.Key
		if key == "" {
			key = m.Label
		}
		keyLine := &polyline{style: line.style}
		keyLine.style.Color = keyInk
		leg.addKeyed(m.Label, line, key, keyLine)
		if m.Label == "" {
			continue
		}
		sty := textStyle(10, h.dark)
		sty.YAlign = draw.YBottom
		dx := vg.Points(4)
		if x > 0.75*a.xmax {
			sty.XAlign, dx = draw.XRight, -dx
		}
		l.notes = append(l.notes, &note{x: x, y: 0, dx: dx, dy: vg.Points(4) + vg.Length(n)*vg.Points(14), text: m.Label, style: sty})
		n++
	}
}

// counts is the second line of a panel's title under Chart.Key: the
// series' probes, by phase where there is more than one, and the lost.
func counts(s Series) string {
	var byPhase [4]int
	lost := 0
	for _, p := range s.Probes {
		if !p.Answered {
			lost++
		}
		if int(p.Phase) < len(byPhase) {
			byPhase[p.Phase]++
		}
	}
	out := fmt.Sprintf("%d probes", len(s.Probes))
	var parts []string
	if n := byPhase[Calibrate]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d calibration", n))
	}
	if n := byPhase[Split]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d split", n))
	}
	if len(parts) > 0 {
		parts = append(parts, fmt.Sprintf("%d re-ordered", byPhase[Reordered]+byPhase[Conventional]))
		out += " (" + strings.Join(parts, ", ") + ")"
	}
	if lost > 0 {
		out += fmt.Sprintf(", %d no reply", lost)
	}
	return out
}

// stopRTT adds the RTTstop line to l, and to leg when it is not nil.
func (a axes) stopRTT(l *layers, leg *legend, rtt time.Duration) {
	if rtt == 0 || ms(rtt) > a.ymax {
		return
	}
	y := ms(rtt)
	line := &polyline{
		pts:   []xy{{0, y}, {a.xmax, y}},
		style: draw.LineStyle{Color: color.Gray{Y: 0x20}, Width: vg.Points(1.1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}},
	}
	l.lines = append(l.lines, line)
	label := rttStop + " " + fmtMs(rtt)
	if leg != nil {
		leg.addKeyed(label, line, label, line)
	}
	sty := textStyle(10, color.Gray{Y: 0x20})
	sty.XAlign, sty.YAlign = draw.XRight, draw.YBottom
	l.notes = append(l.notes, &note{x: a.xmax, y: y, dx: -vg.Points(4), dy: vg.Points(4), text: label, style: sty})
}

// draw renders the chart on dc.
func (c *Chart) draw(dc draw.Canvas) {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	margin := vg.Points(8)
	dc = draw.Crop(dc, margin, -margin, margin, -margin)

	if c.Title != "" {
		sty := textStyle(14, color.Black)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y}, c.Title)
		dc = draw.Crop(dc, 0, 0, 0, -sty.Rectangle(c.Title).Size().Y-vg.Points(6))
	}

	a := c.axes()
	var leg legend
	var panels []*plot.Plot
	switch {
	case c.Layout == SideBySide && len(c.Series) > 1:
		for i, s := range c.Series {
			title := s.Name
			if c.Key {
				title += "\n" + counts(s)
			}
			p := a.panel(title)
			var l layers
			stops := 0
			leg.group = i
			a.series(&l, &leg, s, i, &stops)
			if i == 0 {
				a.stopRTT(&l, &leg, c.StopRTT)
			} else {
				a.stopRTT(&l, nil, c.StopRTT)
			}
			l.addTo(p)
			panels = append(panels, p)
		}
	default:
		p := a.panel("")
		var l layers
		stops := 0
		for i, s := range c.Series {
			leg.group = i
			a.series(&l, &leg, s, i, &stops)
		}
		a.stopRTT(&l, &leg, c.StopRTT)
		l.addTo(p)
		panels = append(panels, p)
	}

	// The legend takes a column on the right, as wide as its longest entry,
	// when that leaves the panels most of the width; otherwise it goes
	// under them, one column per series.
	width := dc.Max.X - dc.Min.X
	area := dc
	all := leg.build(-1)
	if c.Key {
		area = drawKey(dc, leg.key(), c.Caption)
	} else if w := all.Rectangle(dc).Size().X + vg.Points(12); w <= 0.34*width {
		area = draw.Crop(dc, 0, -w, 0, 0)
		all.Draw(draw.Crop(dc, width-w+vg.Points(12), 0, 0, -vg.Points(22)))
	} else if len(leg.entries) > 0 {
		var cols []plot.Legend
		var h vg.Length
		for g := 0; g <= leg.group; g++ {
			col := leg.build(g)
			cols = append(cols, col)
			h = max(h, col.Rectangle(dc).Size().Y)
		}
		h += vg.Points(8)
		area = draw.Crop(dc, 0, 0, h, 0)
		x := vg.Points(24)
		for _, col := range cols {
			col.Draw(draw.Crop(dc, x, 0, 0, -(dc.Max.Y-dc.Min.Y)+h-vg.Points(4)))
			x += col.Rectangle(dc).Size().X + vg.Points(24)
		}
	}

	// As many ticks as fit.
	cols, rows := c.grid()
	panelW := (area.Max.X - area.Min.X) / vg.Length(cols)
	xt := min(max(int(panelW/vg.Points(45)), 3), 10)
	yt := min(max(int((area.Max.Y-area.Min.Y)/vg.Length(rows)/vg.Points(30)), 3), 8)
	for _, p := range panels {
		p.X.Tick.Marker = ticks(xt, false)
		p.Y.Tick.Marker = ticks(yt, a.clipped)
	}

	if len(panels) == 1 {
		panels[0].Draw(area)
		return
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		copy(grid[r], panels[r*cols:min(len(panels), (r+1)*cols)])
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(10)}
	for r, row := range plot.Align(grid, tiles, area) {
		for i, cv := range row {
			if grid[r][i] != nil {
				grid[r][i].Draw(cv)
			}
		}
	}
}

// legend collects legend entries by group (series), so that they can be
// laid out in one column or in one column per group.
type legend struct {
	entries []legendEntry
	group   int // the group of the entries added next
}

type legendEntry struct {
	text  string
	thumb plot.Thumbnailer
	group int
	// keyText and keyThumb are the entry's kind in a Chart.Key legend,
	// where entries of the same keyText are one.
	keyText  string
	keyThumb plot.Thumbnailer
}

// addKeyed adds an entry that is keyText, drawn as keyThumb, in a
// Chart.Key legend; an empty text leaves it out of the other legend.
func (l *legend) addKeyed(text string, thumb plot.Thumbnailer, keyText string, keyThumb plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{text: text, thumb: thumb, group: l.group, keyText: keyText, keyThumb: keyThumb})
}

// build makes a gonum legend of group g's entries, or of all for g < 0.
func (l *legend) build(g int) plot.Legend {
	leg := plot.NewLegend()
	leg.TextStyle = textStyle(10, color.Black)
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(3)
	leg.ThumbnailWidth = vg.Points(18)
	for _, e := range l.entries {
		if e.text != "" && (g < 0 || e.group == g) {
			leg.Add(e.text, e.thumb)
		}
	}
	return leg
}
