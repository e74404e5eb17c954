package rttplot

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// xy is a point in data coordinates: seconds, milliseconds.
type xy struct{ x, y float64 }

// shape is a marker's outline.
type shape uint8

const (
	disc     shape = iota // filled circle: an answered step-6 probe
	triangle              // hollow triangle: a calibration probe
	diamond               // hollow diamond: a split probe
	cross                 // x: a probe with no reply
	caret                 // filled triangle pointing up: an RTT above the axis
)

func (s shape) filled() bool { return s == disc || s == caret }

// smallDisc is the radius up to which a disc is drawn as a square.
const smallDisc = vg.Length(1)

// add appends the outline of one marker of radius r at pt to path.
func (s shape) add(path *vg.Path, pt vg.Point, r vg.Length) {
	switch s {
	case disc:
		if r <= smallDisc {
			// At this size a square of the same area looks the same, and
			// costs a quarter of the path and of the rasteriser's time.
			h := r * 0.886
			path.Move(vg.Point{X: pt.X - h, Y: pt.Y - h})
			path.Line(vg.Point{X: pt.X + h, Y: pt.Y - h})
			path.Line(vg.Point{X: pt.X + h, Y: pt.Y + h})
			path.Line(vg.Point{X: pt.X - h, Y: pt.Y + h})
			path.Close()
			return
		}
		path.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		path.Arc(pt, r, 0, 2*math.Pi)
		path.Close()
	case triangle, caret:
		h := r * 1.2
		path.Move(vg.Point{X: pt.X, Y: pt.Y + h})
		path.Line(vg.Point{X: pt.X - h*0.866, Y: pt.Y - h*0.5})
		path.Line(vg.Point{X: pt.X + h*0.866, Y: pt.Y - h*0.5})
		path.Close()
	case diamond:
		h := r * 1.2
		path.Move(vg.Point{X: pt.X, Y: pt.Y + h})
		path.Line(vg.Point{X: pt.X - h, Y: pt.Y})
		path.Line(vg.Point{X: pt.X, Y: pt.Y - h})
		path.Line(vg.Point{X: pt.X + h, Y: pt.Y})
		path.Close()
	case cross:
		path.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
		path.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
		path.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
		path.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	}
}

// marks is a scatter drawn as one path: one SVG element however many points
// (gonum's Scatter writes one per point), and one fill for the rasteriser.
// Markers that would land on the same spot, to half the marker's radius,
// are drawn once; that keeps 50,000-probe runs small without changing how
// they look.
type marks struct {
	pts   []xy
	shape shape
	r     vg.Length
	color color.Color
}

// Plot implements plot.Plotter.
func (m *marks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	type cell struct{ x, y int32 }
	grid := float64(m.r) / 2
	seen := make(map[cell]struct{}, len(m.pts))
	path := make(vg.Path, 0, len(m.pts)*4)
	for _, d := range m.pts {
		pt := vg.Point{X: trX(d.x), Y: trY(d.y)}
		k := cell{int32(math.Round(float64(pt.X) / grid)), int32(math.Round(float64(pt.Y) / grid))}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		m.shape.add(&path, pt, m.r)
	}
	m.paint(&c, path)
}

func (m *marks) paint(c *draw.Canvas, path vg.Path) {
	if len(path) == 0 {
		return
	}
	if m.shape.filled() {
		c.SetColor(m.color)
		c.Fill(path)
		return
	}
	c.SetLineStyle(draw.LineStyle{Color: m.color, Width: min(vg.Points(0.9), m.r*0.45)})
	c.Stroke(path)
}

// Thumbnail implements plot.Thumbnailer: one marker, a little larger than in
// the plot so that small dots are visible in the legend.
func (m *marks) Thumbnail(c *draw.Canvas) {
	var path vg.Path
	mid := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	m.shape.add(&path, mid, max(m.r, vg.Points(2.6)))
	m.paint(c, path)
}

// polyline is a line through points in data coordinates; a step line holds
// each value until the next point, as a running statistic does.
type polyline struct {
	pts   []xy
	style draw.LineStyle
	steps bool
}

// Plot implements plot.Plotter.
func (l *polyline) Plot(c draw.Canvas, p *plot.Plot) {
	if len(l.pts) == 0 {
		return
	}
	trX, trY := p.Transforms(&c)
	path := make(vg.Path, 0, 2*len(l.pts))
	for i, d := range l.pts {
		pt := vg.Point{X: trX(d.x), Y: trY(d.y)}
		switch {
		case i == 0:
			path.Move(pt)
		case l.steps:
			path.Line(vg.Point{X: pt.X, Y: trY(l.pts[i-1].y)})
			fallthrough
		default:
			path.Line(pt)
		}
	}
	c.SetLineStyle(l.style)
	c.Stroke(path)
}

// Thumbnail implements plot.Thumbnailer.
func (l *polyline) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// note is text at a place in data coordinates, moved by (dx, dy) and set on
// a white box so that it stays legible over a cloud of dots.
type note struct {
	x, y   float64
	dx, dy vg.Length
	text   string
	style  text.Style
}

// Plot implements plot.Plotter.
func (n *note) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	pt := vg.Point{X: trX(n.x) + n.dx, Y: trY(n.y) + n.dy}
	box := n.style.Rectangle(n.text).Add(pt)
	pad := vg.Points(1.5)
	box.Min.X -= pad
	box.Min.Y -= pad
	box.Max.X += pad
	box.Max.Y += pad
	c.SetColor(color.NRGBA{R: 255, G: 255, B: 255, A: 220})
	c.Fill(box.Path())
	c.FillText(n.style, pt, n.text)
}
