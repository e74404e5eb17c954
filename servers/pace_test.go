package servers

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/scout-discovery/scout/probe"
)

// TestServersFlags_Pacing: the default paces by the link; ET's window is
// one flag away; --rate is a fixed pace; --bandwidth caps the default and
// sets the rate of the others; the shared strategy is never changed.
func TestServersFlags_Pacing(t *testing.T) {
	parse := func(args ...string) probe.Prober {
		t.Helper()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		cfg, err := f.Config()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return cfg.Prober
	}
	if p := parse(); p.Pace == nil || p.Interval != 0 || p.Window != 0 {
		t.Errorf("default: %+v, want paced by the link", p)
	}
	if p := parse("--strategy", "et"); p.Pace != nil || p.Window != probe.DefaultWindow || p.Interval != 0 {
		t.Errorf("--strategy et: %+v, want a window of 16", p)
	}
	if p := parse("--rate", "1000"); p.Pace != nil || p.Interval != time.Millisecond {
		t.Errorf("--rate 1000: %+v, want a fixed 1 ms interval", p)
	}
	want := probe.RateForBandwidth(1e6, probe.RequestSize(probe.Q3Info))
	if p := parse("--bandwidth", "1M"); p.Pace == nil || p.Pace.MaxRate != want || p.Interval != 0 {
		t.Errorf("--bandwidth 1M: %+v, want auto capped at %v/s", p, want)
	}
	if p := parse("--strategy", "et", "--bandwidth", "1M"); p.Pace != nil || p.Interval != probe.IntervalForRate(want) {
		t.Errorf("--strategy et --bandwidth 1M: %+v, want a fixed rate of %v/s", p, want)
	}
	st, _ := probe.StrategyNamed("auto")
	if *st.Pace != (probe.Pace{}) {
		t.Errorf("the auto strategy was changed: %+v", *st.Pace)
	}
}
