package rttplot

import (
	"bytes"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// keyed is small(SideBySide) with a key instead of the per-series legend,
// a caption, a mark on each series and one panel per row.
func keyed() Chart {
	c := small(SideBySide)
	c.Key, c.Columns = true, 1
	c.Width, c.Height = 640, 720
	c.Caption = "RTTbottom: the running 50th percentile of the last 3 probes; adaptive stops when it reaches RTTstop. " +
		"A dotted line is where a run found its last playable server (landmark RTTs aside)."
	c.Series[0].Marks = []Mark{{At: 6 * ms1 * 1000, Label: "last playable 6.0 s", Key: "last playable server found"}}
	c.Series[1].Marks = []Mark{{At: 3 * ms1 * 1000, Label: "last playable 3.0 s", Key: "last playable server found"}, {At: 0, Label: "never drawn"}}
	return c
}

// TestWriteSVG_Key checks Chart.Key: one key entry per kind of mark, not
// one per series and kind; each panel's title gives its probe counts; the
// marks are drawn with their labels; the caption is there, with a
// zero-width space in every "Ts" ("RTTs": no s kerned into the T); and
// the per-series legend is gone.
func TestWriteSVG_Key(t *testing.T) {
	svg := svgOf(t, keyed())
	for _, want := range []string{
		`width="480pt" height="540pt"`, // 640x720 px
		">conventional</text>", ">7 probes, 1 no reply</text>",
		">adaptive</text>", ">8 probes (2 calibration, 1 split, 5 re-ordered), 1 no reply</text>",
		">probe</text>", ">calibration probe</text>", ">split probe</text>",
		">RTT above the axis, at top</text>", ">no reply, at top</text>",
		">RTTbottom</text>", ">auto-stop</text>", ">" + rttStop + " 200 ms</text>",
		">last playable server found</text>", ">last playable 6.0 s</text>", ">last playable 3.0 s</text>",
		">auto-stop 3.5 s</text>", ">RTTbottom:", "(landmark RTT\u200bs aside).</text>",
	} {
		if n := strings.Count(svg, want); n == 0 {
			t.Errorf("SVG lacks %q", want)
		}
	}
	for _, text := range []string{">probe</text>", ">last playable server found</text>", ">no reply, at top</text>"} {
		if n := strings.Count(svg, text); n != 1 {
			t.Errorf("%q is in the key %d times, want once", text, n)
		}
	}
	for _, absent := range []string{"adaptive: RTTbottom", "conventional: probes (5)", "never drawn", ">RTTstop", "RTTs"} {
		if strings.Contains(svg, absent) {
			t.Errorf("SVG holds %q", absent)
		}
	}
	if a, b := svgOf(t, keyed()), svgOf(t, keyed()); a != b {
		t.Error("two SVGs of one keyed chart differ")
	}
}

// TestWritePNG_Grid: Columns wraps panels into rows, and the default
// height grows with them; Columns below zero is refused.
func TestWritePNG_Grid(t *testing.T) {
	c := small(SideBySide)
	c.Width, c.Height = 0, 0
	c.Columns, c.Key = 1, true
	var b bytes.Buffer
	if err := WritePNG(&b, c); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds(); got.Dx() != DefaultPanelWidth || got.Dy() != 2*DefaultRowHeight {
		t.Errorf("one column of two panels: %dx%d, want %dx%d", got.Dx(), got.Dy(), DefaultPanelWidth, 2*DefaultRowHeight)
	}
	c.Columns = -1
	if err := WritePNG(&b, c); err == nil {
		t.Error("Columns -1 accepted")
	}
	dir := *outDir // -out DIR to look at it
	if dir == "" {
		dir = t.TempDir()
	}
	if err := Write(filepath.Join(dir, "key.png"), keyed()); err != nil {
		t.Fatal(err)
	}
}

// TestWrap breaks a caption at spaces and at its own line breaks, never
// wider than the width unless one word is.
func TestWrap(t *testing.T) {
	sty := textStyle(keyCapText, keyInk)
	width := sty.Width("the quick brown fox")
	got := wrap("the quick brown fox jumps over the lazy dog\nsupercalifragilisticexpialidocious-and-more end", sty, width)
	want := []string{"the quick brown fox", "jumps over the lazy", "dog", "supercalifragilisticexpialidocious-and-more", "end"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
	for _, l := range got[:3] {
		if sty.Width(l) > width {
			t.Errorf("%q is wider than %v", l, width)
		}
	}
	if len(wrap("", sty, vg.Points(100))) != 0 {
		t.Error("an empty caption has lines")
	}
}
