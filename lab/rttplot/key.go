package rttplot

import (
	"image/color"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// keyInk is the colour of a Chart.Key legend's thumbnails: the key says
// what a shape or a line means, each panel's colour which run it is.
var keyInk = color.NRGBA{R: 0x40, G: 0x40, B: 0x40, A: 0xff}

// key returns the entries of a Chart.Key legend: one per kind of mark, in
// the order they were first added.
func (l *legend) key() []legendEntry {
	var out []legendEntry
	seen := map[string]bool{}
	for _, e := range l.entries {
		if e.keyText == "" || seen[e.keyText] {
			continue
		}
		seen[e.keyText] = true
		out = append(out, e)
	}
	return out
}

// Key layout, in points.
const (
	keyThumbW  = 18  // a thumbnail's width
	keyGap     = 4   // between a thumbnail and its text
	keySep     = 16  // between entries of a row
	keyRowH    = 15  // a row of entries
	keyCapH    = 12  // a line of the caption
	keyPadding = 6   // above the key, below the panels
	keyText    = 10  // the entries' text size
	keyCapText = 9.5 // the caption's text size
)

// drawKey draws entries in rows centred at the foot of dc, each a
// thumbnail and its text, wrapping to the width, and caption under them
// wrapped the same way; it returns the canvas left above them.
func drawKey(dc draw.Canvas, entries []legendEntry, caption string) draw.Canvas {
	sty := textStyle(keyText, color.Black)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	capSty := textStyle(keyCapText, color.Gray{Y: 0x30})
	capSty.XAlign, capSty.YAlign = draw.XCenter, draw.YTop
	width := dc.Max.X - dc.Min.X

	// Rows of entries: each entry's offset in its row, and each row's width.
	type placed struct {
		e   legendEntry
		x   vg.Length
		row int
	}
	var ps []placed
	var rowW []vg.Length
	x := vg.Length(0)
	for _, e := range entries {
		w := vg.Points(keyThumbW+keyGap) + sty.Width(e.keyText)
		if len(rowW) == 0 || (x > 0 && x+w > width) {
			rowW = append(rowW, 0)
			x = 0
		}
		ps = append(ps, placed{e: e, x: x, row: len(rowW) - 1})
		rowW[len(rowW)-1] = x + w
		x += w + vg.Points(keySep)
	}
	lines := wrap(caption, capSty, width)
	h := vg.Length(len(rowW))*vg.Points(keyRowH) + vg.Length(len(lines))*vg.Points(keyCapH)
	if h == 0 {
		return dc
	}

	top := dc.Min.Y + h
	for _, p := range ps {
		x0 := dc.Min.X + (width-rowW[p.row])/2 + p.x
		y := top - vg.Length(p.row)*vg.Points(keyRowH) - vg.Points(keyRowH)/2
		thumb := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x0, Y: y - vg.Points(4)},
			Max: vg.Point{X: x0 + vg.Points(keyThumbW), Y: y + vg.Points(4)},
		}}
		p.e.keyThumb.Thumbnail(&thumb)
		dc.FillText(sty, vg.Point{X: x0 + vg.Points(keyThumbW+keyGap), Y: y}, unkern(p.e.keyText))
	}
	y := top - vg.Length(len(rowW))*vg.Points(keyRowH)
	for _, line := range lines {
		dc.FillText(capSty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: y}, unkern(line)) // RTTstop, RTTs: no s kerned into T
		y -= vg.Points(keyCapH)
	}
	return draw.Crop(dc, 0, 0, h+vg.Points(keyPadding), 0)
}

// wrap breaks text into lines no wider than width in style sty, at spaces
// and at the text's own line breaks. A word wider than width has a line
// of its own.
func wrap(text string, sty interface{ Width(string) vg.Length }, width vg.Length) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			switch {
			case line == "":
				line = w
			case sty.Width(line+" "+w) <= width:
				line += " " + w
			default:
				out = append(out, line)
				line = w
			}
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}
