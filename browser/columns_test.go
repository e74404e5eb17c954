package browser

import (
	"slices"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestLayout_ColumnsDropByPriority(t *testing.T) {
	titles := func(w int) []string {
		var ts []string
		for _, c := range LayoutFor(w).cols {
			ts = append(ts, c.title)
		}
		return ts
	}
	for _, tc := range []struct {
		width int
		want  []string
	}{
		{200, []string{"NAME", "MAP", "PLAYERS", "PING", "ADDRESS", "GAME", "TYPE"}},
		{90, []string{"NAME", "MAP", "PLAYERS", "PING", "ADDRESS", "GAME"}},
		{80, []string{"NAME", "MAP", "PLAYERS", "PING", "ADDRESS"}},
		{60, []string{"NAME", "MAP", "PLAYERS", "PING"}},
		{45, []string{"NAME", "PLAYERS", "PING"}},
	} {
		if got := titles(tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("width %d: columns %q, want %q", tc.width, got, tc.want)
		}
		l := LayoutFor(tc.width)
		if w := ansi.StringWidth(l.Header("ping")); w > tc.width {
			t.Errorf("width %d: header is %d cells", tc.width, w)
		}
	}
}
