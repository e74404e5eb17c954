package rttplot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Phase says which part of a discovery run sent a probe.
type Phase uint8

const (
	// Conventional is a probe of conventional discovery, in the master's
	// order. It is the zero value, so a producer of a conventional run need
	// not set it.
	Conventional Phase = iota
	// Calibrate is an initial probe of Algorithm 1 step 4 (calibration).
	Calibrate
	// Split is the probe step 4(e) sends to each cluster made by a split.
	Split
	// Reordered is a probe of Algorithm 1 step 6, in cluster rank order.
	Reordered
)

func (p Phase) String() string {
	switch p {
	case Conventional:
		return "conventional"
	case Calibrate:
		return "calibration"
	case Split:
		return "split"
	case Reordered:
		return "re-ordered"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// stepSix reports whether Algorithm 2 counts probes of phase p.
func (p Phase) stepSix() bool { return p == Conventional || p == Reordered }

// Probe is one probe of a discovery run.
type Probe struct {
	At       time.Duration // when it was sent, since the start of discovery (virtual or monotonic time)
	RTT      time.Duration // round-trip time; ignored when Answered is false
	Answered bool          // false for a probe that got no reply before its timeout
	Phase    Phase
}

// Series is one discovery run.
type Series struct {
	// Name names the run in the legend and, in SideBySide, above its
	// panel: "conventional", "adaptive", "adaptive (AS clusters)".
	Name string
	// Probes are drawn as a scatter of RTT against At. Their order does not
	// matter to the drawing.
	Probes []Probe
	// Bottom, if not empty, is drawn as a line: usually Algorithm 2's
	// RTTbottom as [Bottom] computes it.
	Bottom []Point
	// StopAt is when auto-stop fired, since the start of discovery; 0 means
	// it did not fire (or the run had no auto-stop) and no line is drawn.
	StopAt time.Duration
	// Marks are moments of the run drawn as dotted vertical lines in the
	// series' colour, labelled at the foot of the panel: "last playable
	// 9.0 s".
	Marks []Mark
}

// Mark is a moment of a run worth pointing at.
type Mark struct {
	At    time.Duration // since the start of discovery; a mark at 0 or less is not drawn
	Label string        // beside the line, in the panel
	// Key names the kind of mark in the legend ("last playable server
	// found"); marks of every series with the same Key share one entry of
	// a Chart.Key legend.
	Key string
}

// Layout says how a Chart with several series is arranged.
type Layout uint8

const (
	// Overlay draws every series in one panel. It is the zero value.
	Overlay Layout = iota
	// SideBySide draws one panel per series, left to right in Series
	// order, with the same axes.
	SideBySide
)

// Sizes, in pixels. The PNG is exactly Width x Height pixels; the SVG has
// the same size at 96 pixels per inch (its width and height are written in
// points, 3/4 of the pixel counts).
const (
	DefaultWidth      = 960  // Chart.Width 0 in Overlay
	DefaultPanelWidth = 600  // Chart.Width 0 in SideBySide: this much per panel, plus the legend
	DefaultHeight     = 540  // Chart.Height 0
	DefaultRowHeight  = 400  // Chart.Height 0, per row, when Columns wraps the panels
	MaxSize           = 8192 // the largest Width or Height accepted
	MinSize           = 160  // the smallest Width or Height accepted
)

// Chart is one figure.
type Chart struct {
	Title  string // above the panels; "" for none
	Layout Layout
	Series []Series
	// StopRTT is Algorithm 2's RTTstop, drawn as a dashed horizontal line;
	// 0 draws none.
	StopRTT time.Duration
	// MaxRTT is the top of the RTT axis. Answered RTTs above it are pinned
	// to the top edge, and so are unanswered probes. 0 takes the largest
	// answered RTT, rounded up to 100 ms, and at least 1.5 x StopRTT.
	MaxRTT time.Duration
	// Width and Height are the picture's size in pixels; 0 takes
	// DefaultWidth (DefaultPanelWidth per panel plus the legend in
	// SideBySide) and DefaultHeight (DefaultRowHeight per row of panels
	// when Columns makes more than one).
	Width, Height int
	// Columns is how many panels of a SideBySide chart share a row; the
	// rest wrap to the rows below. 0 puts every panel in one row.
	Columns int
	// Key replaces the legend of one entry per series and kind of mark
	// (which takes a column beside the panels) with a key under the
	// panels: one entry per kind of mark, in neutral ink, since each
	// panel's colour and title already say which run it is; each panel's
	// title gets a second line with its probe counts. Caption, if set, is
	// printed under the key, wrapped to the width: what the reader needs to
	// read the lines (what RTTbottom is, what a mark means).
	Key     bool
	Caption string
}

// ErrFormat is returned by [Write] for a file name whose extension is
// neither .svg nor .png.
var ErrFormat = errors.New("rttplot: unknown image format")

// pxToPt converts pixels at 96 per inch to vg lengths (points, 72 per inch).
const pxToPt = 72.0 / 96.0

// size returns the chart's size in points after applying defaults and
// checking bounds.
func (c *Chart) size() (w, h vg.Length, err error) {
	pw, ph := c.Width, c.Height
	cols, rows := c.grid()
	if pw == 0 {
		pw = DefaultWidth
		if c.Layout == SideBySide && len(c.Series) > 1 {
			legend := legendWidthPx
			if c.Key {
				legend = 0
			}
			pw = min(DefaultPanelWidth*cols+legend, MaxSize)
		}
	}
	if ph == 0 {
		ph = DefaultHeight
		if rows > 1 {
			ph = min(DefaultRowHeight*rows, MaxSize)
		}
	}
	if pw < MinSize || pw > MaxSize || ph < MinSize || ph > MaxSize {
		return 0, 0, fmt.Errorf("rttplot: size %dx%d pixels: each side must be in [%d, %d]", c.Width, c.Height, MinSize, MaxSize)
	}
	return vg.Length(float64(pw) * pxToPt), vg.Length(float64(ph) * pxToPt), nil
}

func (c *Chart) check() error {
	switch {
	case c.Layout != Overlay && c.Layout != SideBySide:
		return fmt.Errorf("rttplot: unknown layout %d", c.Layout)
	case c.StopRTT < 0:
		return fmt.Errorf("rttplot: negative StopRTT %v", c.StopRTT)
	case c.MaxRTT < 0:
		return fmt.Errorf("rttplot: negative MaxRTT %v", c.MaxRTT)
	case c.Columns < 0:
		return fmt.Errorf("rttplot: negative Columns %d", c.Columns)
	}
	return nil
}

// grid returns the panels per row and the rows of panels.
func (c *Chart) grid() (cols, rows int) {
	if c.Layout != SideBySide || len(c.Series) < 2 {
		return 1, 1
	}
	cols = len(c.Series)
	if c.Columns > 0 && c.Columns < cols {
		cols = c.Columns
	}
	return cols, (len(c.Series) + cols - 1) / cols
}

// WriteSVG writes the chart as an SVG document. Fonts are named (Liberation
// Sans, then the metric-compatible Arial and Helvetica), not embedded. The
// output depends only on c.
func WriteSVG(w io.Writer, c Chart) error {
	if err := c.check(); err != nil {
		return err
	}
	width, height, err := c.size()
	if err != nil {
		return err
	}
	canvas := vgsvg.NewWith(vgsvg.UseWH(width, height))
	c.draw(draw.New(canvas))
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return err
	}
	// gonum names the face alone; a viewer without it would fall back to
	// its default, usually a serif. Offer the metric-compatible faces.
	out := bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFonts))
	_, err = w.Write(out)
	return err
}

// svgFonts is the font-family of every SVG text.
const svgFonts = `font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`

// WritePNG writes the chart as a Width x Height PNG image.
func WritePNG(w io.Writer, c Chart) error {
	if err := c.check(); err != nil {
		return err
	}
	width, height, err := c.size()
	if err != nil {
		return err
	}
	canvas := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))
	c.draw(draw.New(canvas))
	_, err = vgimg.PngCanvas{Canvas: canvas}.WriteTo(w)
	return err
}

// Write writes the chart to the file at path, as SVG or PNG by the path's
// extension (.svg or .png, any case); any other extension is [ErrFormat].
// The picture is rendered before the file is created, so a chart that
// cannot be drawn leaves no file behind.
func Write(path string, c Chart) error {
	var render func(io.Writer, Chart) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		render = WriteSVG
	case ".png":
		render = WritePNG
	default:
		return fmt.Errorf("%w: %q (want .svg or .png)", ErrFormat, path)
	}
	var b bytes.Buffer
	if err := render(&b, c); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
