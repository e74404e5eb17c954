package servers

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/adaptive"
)

// TestOrder_VariantFlags checks --variant and --cluster-by: the variant
// chooses the constants, --auto-stop and an explicit --cluster-by override
// theirs, and an unknown variant is refused.
func TestOrder_VariantFlags(t *testing.T) {
	parse := func(args ...string) (adaptive.Params, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			return adaptive.Params{}, err
		}
		cfg, err := f.Config()
		if err != nil {
			return adaptive.Params{}, err
		}
		return cfg.Order.Params(), nil
	}
	paper, scout := adaptive.Paper(), adaptive.Scout()
	asPaper := paper
	asPaper.ClusterBy = adaptive.ByAS
	byCountry := scout
	byCountry.ClusterBy = adaptive.ByCountry
	noStop := scout
	noStop.StopRTT = 0
	for _, tc := range []struct {
		args []string
		want adaptive.Params
	}{
		{nil, paper},
		{[]string{"--order", "adaptive"}, paper},
		{[]string{"--variant", "paper", "--cluster-by", "as"}, asPaper},
		{[]string{"--variant", "scout"}, scout},
		{[]string{"--variant", "scout", "--cluster-by", "country"}, byCountry},
		{[]string{"--variant", "scout", "--auto-stop", "0"}, noStop},
	} {
		got, err := parse(tc.args...)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	if _, err := parse("--variant", "fast"); err == nil || !strings.Contains(err.Error(), "--variant") {
		t.Errorf("--variant fast: %v, want an error naming --variant", err)
	}
}
