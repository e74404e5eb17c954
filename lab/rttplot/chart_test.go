package rttplot

import (
	"bytes"
	"errors"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	update = flag.Bool("update", false, "rewrite testdata/*.svg from the current output")
	outDir = flag.String("out", "", "also write the synthetic sample charts to this directory, to look at them")
)

// small is a hand-made chart with one of everything: conventional and
// adaptive series, every phase, a lost probe, an RTT above the axis, a
// running bottom and an auto-stop.
func small(layout Layout) Chart {
	s := time.Second
	conv := Series{Name: "conventional", Probes: []Probe{
		answered(0, 250*ms1, Conventional),
		answered(1*s, 30*ms1, Conventional),
		lost(2*s, Conventional),
		answered(3*s, 320*ms1, Conventional),
		answered(4*s, 900*ms1, Conventional), // above MaxRTT
		answered(5*s, 210*ms1, Conventional),
		answered(6*s, 180*ms1, Conventional),
	}}
	conv.Bottom = Bottom(conv.Probes, 3, 0.5)
	adap := Series{Name: "adaptive", Probes: []Probe{
		answered(0, 300*ms1, Calibrate),
		answered(500*ms1, 35*ms1, Calibrate),
		answered(1*s, 190*ms1, Split),
		answered(1500*ms1, 30*ms1, Reordered),
		answered(2*s, 180*ms1, Reordered),
		lost(2500*ms1, Reordered),
		answered(3*s, 210*ms1, Reordered),
		answered(3500*ms1, 250*ms1, Reordered),
	}, StopAt: 3500 * ms1}
	adap.Bottom = Bottom(adap.Probes, 3, 0.5)
	return Chart{
		Title:   "rttplot test chart",
		Layout:  layout,
		Series:  []Series{conv, adap},
		StopRTT: 200 * ms1,
		MaxRTT:  600 * ms1,
		Width:   640,
		Height:  360,
	}
}

func svgOf(t *testing.T, c Chart) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSVG(&b, c); err != nil {
		t.Fatalf("WriteSVG: %v", err)
	}
	return b.String()
}

// TestWriteSVG_Elements looks for the text of everything a reader needs.
func TestWriteSVG_Elements(t *testing.T) {
	for _, layout := range []Layout{Overlay, SideBySide} {
		svg := svgOf(t, small(layout))
		for _, want := range []string{
			`width="480pt" height="270pt"`, // 640x360 px
			">rttplot test chart</text>",
			">conventional: probes (5)</text>",
			">conventional: no reply, at top (1)</text>",
			">conventional: RTT above axis, at top (1)</text>",
			">adaptive: calibration probes (2)</text>",
			">adaptive: split probes (1)</text>",
			">adaptive: re-ordered probes (4)</text>",
			">adaptive: RTTbottom</text>",
			">adaptive: auto-stop at 3.5 s</text>",
			">auto-stop 3.5 s</text>",
			">" + rttStop + " 200 ms</text>",
			">≥600</text>", // the top tick, as an RTT was pinned there
			">time since discovery started (s)</text>",
			">RTT (ms)</text>",
			svgFonts,
		} {
			if !strings.Contains(svg, want) {
				t.Errorf("layout %d: SVG lacks %q", layout, want)
			}
		}
		if strings.Contains(svg, "font-family:Liberation Sans;") {
			t.Errorf("layout %d: SVG names a font with no fallback", layout)
		}
	}
	if side := svgOf(t, small(SideBySide)); !strings.Contains(side, ">conventional</text>") || !strings.Contains(side, ">adaptive</text>") {
		t.Error("SideBySide: panels lack their series' names as titles")
	}
}

// TestWriteSVG_NotClipped: without an RTT above the axis, the top tick is a
// plain number.
func TestWriteSVG_NotClipped(t *testing.T) {
	c := small(Overlay)
	c.MaxRTT = time.Second
	svg := svgOf(t, c)
	if strings.Contains(svg, "≥") {
		t.Error("no RTT is above 1000 ms, yet a tick says ≥")
	}
	if strings.Contains(svg, "above axis") {
		t.Error("no RTT is above 1000 ms, yet the legend has one above the axis")
	}
}

// TestWriteSVG_Golden compares with testdata; go test -update rewrites it.
func TestWriteSVG_Golden(t *testing.T) {
	for name, layout := range map[string]Layout{"overlay.svg": Overlay, "side-by-side.svg": SideBySide} {
		got := svgOf(t, small(layout))
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to make it)", err)
		}
		if got != string(want) {
			t.Errorf("%s: output differs from the golden file (look at both, then go test -update if the change is meant)", name)
		}
	}
}

// TestWrite_Deterministic renders the same large chart twice.
func TestWrite_Deterministic(t *testing.T) {
	conv, adap := synthetic(3, 3000, 20*ms1)
	for _, layout := range []Layout{Overlay, SideBySide} {
		c := Chart{Layout: layout, Series: []Series{conv, adap}, StopRTT: 200 * ms1}
		if a, b := svgOf(t, c), svgOf(t, c); a != b {
			t.Errorf("layout %d: two SVGs of one chart differ", layout)
		}
		var p1, p2 bytes.Buffer
		if err := WritePNG(&p1, c); err != nil {
			t.Fatal(err)
		}
		if err := WritePNG(&p2, c); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p1.Bytes(), p2.Bytes()) {
			t.Errorf("layout %d: two PNGs of one chart differ", layout)
		}
	}
}

func TestWritePNG_Size(t *testing.T) {
	for _, c := range []struct {
		chart Chart
		w, h  int
	}{
		{Chart{}, DefaultWidth, DefaultHeight},
		{Chart{Width: 333, Height: 201}, 333, 201},
		{Chart{Width: MinSize, Height: MinSize}, MinSize, MinSize},
		{small(Overlay), 640, 360},
		{func() Chart { c := small(SideBySide); c.Width, c.Height = 0, 0; return c }(), 2*DefaultPanelWidth + legendWidthPx, DefaultHeight},
	} {
		var b bytes.Buffer
		if err := WritePNG(&b, c.chart); err != nil {
			t.Fatalf("%dx%d: %v", c.chart.Width, c.chart.Height, err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%dx%d: decoding: %v", c.chart.Width, c.chart.Height, err)
		}
		if got := img.Bounds().Size(); got.X != c.w || got.Y != c.h {
			t.Errorf("Width %d, Height %d: PNG is %v, want %dx%d", c.chart.Width, c.chart.Height, got, c.w, c.h)
		}
	}
}

// TestWritePNG_StopLine finds the auto-stop line in the pixels: a column of
// the series' dark colour where StopAt is, and nowhere else in that row.
func TestWritePNG_StopLine(t *testing.T) {
	chart := func(stop time.Duration) Chart {
		return Chart{Width: 400, Height: 300, Series: []Series{{Name: "a", Probes: []Probe{answered(10*time.Second, 50*ms1, Reordered)}, StopAt: stop}}}
	}
	darkCols := func(c Chart) int {
		var b bytes.Buffer
		if err := WritePNG(&b, c); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatal(err)
		}
		dark := hueOf(0).dark
		n, y := 0, img.Bounds().Dy()/2 // half way up the plot: no dot, no text
		for x := range img.Bounds().Dx() {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == uint32(dark.R) && g>>8 == uint32(dark.G) && bl>>8 == uint32(dark.B) {
				n++
			}
		}
		return n
	}
	if n := darkCols(chart(0)); n != 0 {
		t.Errorf("no auto-stop: %d pixels of the line's colour", n)
	}
	if n := darkCols(chart(5 * time.Second)); n == 0 {
		t.Error("auto-stop at 5 s: no pixel of the line's colour half way up")
	}
}

// TestWrite_EdgeCases: nothing, one probe, one lost probe, only a stop.
func TestWrite_EdgeCases(t *testing.T) {
	for name, c := range map[string]Chart{
		"empty":                   {},
		"no probes":               {Series: []Series{{Name: "a"}, {Name: "b"}}, Layout: SideBySide, StopRTT: 200 * ms1},
		"one probe":               {Series: []Series{{Name: "a", Probes: []Probe{answered(0, 80*ms1, Reordered)}}}},
		"one lost probe":          {Series: []Series{{Name: "a", Probes: []Probe{lost(time.Second, Conventional)}}}},
		"only a stop":             {Series: []Series{{StopAt: time.Second}}, StopRTT: 200 * ms1},
		"one series side by side": {Layout: SideBySide, Series: []Series{{Name: "a", Probes: []Probe{answered(0, 80*ms1, Reordered)}}}},
		"stop above axis":         {StopRTT: time.Second, MaxRTT: 500 * ms1, Series: []Series{{Name: "a", Probes: []Probe{answered(0, 80*ms1, Reordered)}}}},
	} {
		var s, p bytes.Buffer
		if err := WriteSVG(&s, c); err != nil {
			t.Errorf("%s: WriteSVG: %v", name, err)
		}
		if !strings.HasSuffix(s.String(), "</svg>\n") {
			t.Errorf("%s: SVG does not end with </svg>", name)
		}
		if err := WritePNG(&p, c); err != nil {
			t.Errorf("%s: WritePNG: %v", name, err)
		}
		if _, err := png.Decode(&p); err != nil {
			t.Errorf("%s: PNG does not decode: %v", name, err)
		}
	}
}

func TestWrite_Refusals(t *testing.T) {
	for name, c := range map[string]Chart{
		"too narrow":       {Width: MinSize - 1},
		"too tall":         {Height: MaxSize + 1},
		"negative width":   {Width: -1},
		"negative StopRTT": {StopRTT: -1},
		"negative MaxRTT":  {MaxRTT: -1},
		"unknown layout":   {Layout: 9},
	} {
		if err := WriteSVG(&bytes.Buffer{}, c); err == nil {
			t.Errorf("%s: WriteSVG did not refuse", name)
		}
		if err := WritePNG(&bytes.Buffer{}, c); err == nil {
			t.Errorf("%s: WritePNG did not refuse", name)
		}
	}
}

func TestWrite_ByExtension(t *testing.T) {
	dir := t.TempDir()
	for name, magic := range map[string]string{"a.svg": "<?xml", "b.PNG": "\x89PNG"} {
		path := filepath.Join(dir, name)
		if err := Write(path, small(Overlay)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(magic)) {
			t.Errorf("%s starts with %q, want %q", name, b[:min(len(b), 8)], magic)
		}
	}
	for _, name := range []string{"c.pdf", "noext"} {
		path := filepath.Join(dir, name)
		if err := Write(path, small(Overlay)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a file was left behind", name)
		}
	}
	bad := filepath.Join(dir, "bad.png")
	if err := Write(bad, Chart{Width: 1}); err == nil {
		t.Error("a 1-pixel-wide chart was written")
	} else if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Error("a chart that cannot be drawn left a file behind")
	}
}

// TestWrite_Samples renders the synthetic charts. They are made-up data;
// run with -out DIR to look at them.
func TestWrite_Samples(t *testing.T) {
	conv, adap := synthetic(1, 2500, 28*ms1)
	dir := *outDir
	if dir == "" {
		dir = t.TempDir()
	}
	title := "Synthetic test data: a far client, 2,500 servers"
	for file, c := range map[string]Chart{
		"overlay.png":      {Title: title, StopRTT: 200 * ms1, MaxRTT: 600 * ms1, Series: []Series{conv, adap}},
		"overlay.svg":      {Title: title, StopRTT: 200 * ms1, MaxRTT: 600 * ms1, Series: []Series{conv, adap}},
		"side-by-side.png": {Title: title, Layout: SideBySide, StopRTT: 200 * ms1, MaxRTT: 600 * ms1, Series: []Series{conv, adap}},
		"adaptive.png":     {Title: "Synthetic test data: re-ordered probe sequence", StopRTT: 200 * ms1, Series: []Series{adap}},
	} {
		if err := Write(filepath.Join(dir, file), c); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if *outDir != "" {
		bc, ba := synthetic(1, 50000, 4*ms1)
		c := Chart{Title: "Synthetic test data: 50,000 servers", Layout: SideBySide, StopRTT: 200 * ms1, Series: []Series{bc, ba}}
		if err := Write(filepath.Join(dir, "50k.png"), c); err != nil {
			t.Fatal(err)
		}
	}
	if adap.StopAt == 0 || adap.StopAt >= conv.Probes[len(conv.Probes)-1].At {
		t.Errorf("the synthetic far client should auto-stop before the conventional run ends; stopped at %v", adap.StopAt)
	}
}

func bigChart(b *testing.B) Chart {
	conv, adap := synthetic(1, 50000, 4*ms1)
	if len(conv.Probes) != 50000 {
		b.Fatalf("%d probes", len(conv.Probes))
	}
	return Chart{Title: "50,000 servers", Layout: SideBySide, StopRTT: 200 * ms1, Series: []Series{conv, adap}}
}

func BenchmarkWritePNG_50k(b *testing.B) {
	c := bigChart(b)
	for b.Loop() {
		var buf bytes.Buffer
		if err := WritePNG(&buf, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteSVG_50k(b *testing.B) {
	c := bigChart(b)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := WriteSVG(&buf, c); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes/svg")
}
