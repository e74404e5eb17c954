package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/q3"
)

// runSignalled runs a master of cfg on loopback (UDP and HTTP) until the
// test ends; its "listed" records go to the returned handler.
func runSignalled(t *testing.T, cfg masterd.Config) (*masterd.Master, masterproc.Listed) {
	t.Helper()
	listed := masterproc.Listed{C: make(chan string, 16)}
	cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	cfg.HTTP = "127.0.0.1:0"
	cfg.Registry.AllowLoopback = true
	m, err := masterd.NewMaster(time.Now(), cfg, masterd.Deps{Logger: slog.New(listed)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	return m, listed
}

// TestBrowser_UpstreamsAndBlockList: the other masters' page shows an
// upstream's health as the API gives it (state, servers reported and
// verified, answer time, uptime over 24 h and 7 days), and the block
// list's page each entry with its reason, set as text.
func TestBrowser_UpstreamsAndBlockList(t *testing.T) {
	ctx := newBrowser(t, desktopWidth, desktopHeight)
	srv := masterproc.NewServer(t)
	a, aListed := runSignalled(t, masterd.Config{})
	srv.Heartbeat(t, a.Addrs()[0])
	aListed.Wait(t, srv.Addr, "the master")

	var cfg masterd.Config
	cfg.Handler.Aggregate.Sources = []upstream.Source{{Name: "first", Addr: a.Addrs()[0],
		Queries: []upstream.Query{{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: 71, Empty: true, Full: true}}}}}
	cfg.Registry.Blocked = []master.Block{{Prefix: netip.MustParsePrefix("203.0.113.0/24"), Reason: "<b>one server on 500 ports</b>"}}
	b, bListed := runSignalled(t, cfg)
	bListed.Wait(t, srv.Addr, "the master")
	base := "http://" + b.HTTPAddr().String()

	row := `document.querySelector("#upstreams tbody tr")`
	do(t, ctx, "opening the other masters' page", chromedp.Navigate(base+"/upstreams"),
		poll(row+` !== null && `+row+`.dataset.state === "up" && `+row+`.cells[3].textContent === "1"`))
	cells := eval[[]string](t, ctx, `[...`+row+`.cells].map(c => c.textContent)`)
	if len(cells) != 8 || cells[0] != "first" || cells[1] != "up" || cells[2] == "never" || cells[4] != "1" ||
		cells[6] != "100.0 %" || cells[7] != "100.0 %" {
		t.Errorf("the upstream's row: %q", cells)
	}
	if title := eval[string](t, ctx, row+`.cells[0].title`); title != fmt.Sprintf("master %v\ngetservers 71 empty full", a.Addrs()[0]) {
		t.Errorf("the upstream's title %q", title)
	}

	do(t, ctx, "opening the block list's page", chromedp.Navigate(base+"/blocked"),
		poll(`document.querySelectorAll("#blocked tbody tr").length === 1`))
	blocked := eval[[]string](t, ctx, `[...document.querySelector("#blocked tbody tr").cells].map(c => c.textContent)`)
	if len(blocked) < 2 || blocked[0] != "203.0.113.0/24" || blocked[1] != "<b>one server on 500 ports</b>" {
		t.Errorf("the block list's row: %q", blocked)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#blocked b").length`); n != 0 {
		t.Errorf("a reason was read as HTML: %d <b> elements", n)
	}
}
