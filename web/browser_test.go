package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/web"
)

// Bounds of the real-master setup of the browser tests.
const (
	// testReprobe is the re-probe period the test master gives every game,
	// so that player lists (from getstatus) arrive within seconds.
	testReprobe = 2 * time.Second
	// listedTimeout bounds the wait for servers to be listed and for
	// their players to be known.
	listedTimeout = 30 * time.Second
	// worldServers is the number of emulated servers beside OpenArena.
	worldServers = 14
	// newcomerPlayers is the crowd on the server that joins mid-test, more
	// than any server of the world has slots, so that it sorts first.
	newcomerPlayers = 60
)

// scout is a real master with real registered servers: an OpenArena
// dedicated server with bots, an emulated world heartbeating over
// loopback, and one more emulated server held back (newcomer) to join
// while the page is open.
type scout struct {
	base     string         // http://127.0.0.1:PORT
	oa       netip.AddrPort // the OpenArena server, as listed
	newcomer netip.AddrPort // the held-back server, as it will be listed
	startNew func()         // starts the newcomer's heartbeats
	stopNew  func()         // stops it (its shutdown heartbeat, then silence)
}

// listPage is the part of a /api/v1/servers answer the tests read.
type listPage struct {
	Version uint64 `json:"version"`
	Total   int    `json:"total"`
	Servers []struct {
		Address string   `json:"address"`
		Game    string   `json:"game"`
		Players int      `json:"players"`
		Ping    *float64 `json:"ping_estimate_ms"`
	} `json:"servers"`
}

func (l listPage) addresses() []string {
	var out []string
	for _, s := range l.Servers {
		out = append(out, s.Address)
	}
	return out
}

func startScout(t *testing.T) *scout {
	t.Helper()
	// The peers first: a missing Chromium or OpenArena skips before any work.
	peer.Need(t, Chromium, "apt-get install chromium")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	masterUDP := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), peer.FreeUDPPort(t))

	gen, err := world.Generate(world.Spec{Servers: worldServers, Seed: 7, Full: 0.2, Empty: 0.2,
		RTTMin: time.Millisecond, RTTMax: 30 * time.Millisecond,
		Games: world.Mix{{Game: world.Q3A, Weight: 2}, {Game: world.ET, Weight: 2}, {Game: world.OA, Weight: 1}, {Game: world.Q4, Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := world.Listen(gen, world.Config{Masters: []netip.AddrPort{masterUDP}})
	if err != nil {
		t.Fatal(err)
	}
	// The newcomer: bound now (so the master's address map knows it), run later.
	one, err := world.Generate(world.Spec{Servers: 1, Seed: 8, Full: 1, Games: world.Mix{{Game: world.Q3A, Weight: 1}},
		RTTMin: time.Millisecond, RTTMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	nc := &one.Servers[0]
	nc.Hostname, nc.MaxClients, nc.Players = "^3Newcomer ^7crowd", newcomerPlayers, nil
	for i := range newcomerPlayers {
		nc.Players = append(nc.Players, world.Player{Name: fmt.Sprintf("^%dplayer%02d", i%8, i), Score: i, Ping: 20 + i})
	}
	emuNew, err := world.Listen(one, world.Config{Masters: []netip.AddrPort{masterUDP}})
	if err != nil {
		emu.Close()
		t.Fatal(err)
	}

	// The master lists the emulated servers at their public addresses.
	var maps []master.Mapping
	for _, p := range append(emu.Table().Pairs(), emuNew.Table().Pairs()...) {
		maps = append(maps, master.Mapping{From: p.Loopback, To: p.Public})
	}
	am, err := master.NewAddrMap(maps...)
	if err != nil {
		t.Fatal(err)
	}
	games := game.Builtin()
	for _, g := range games {
		g.Reprobe.Interval = testReprobe
	}
	cat, err := game.NewCatalogue(games...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := masterd.NewMaster(time.Now(), masterd.Config{
		Listen: []netip.AddrPort{masterUDP},
		HTTP:   "127.0.0.1:0",
		Reloadable: masterd.Reloadable{
			NoQueryLimit: true,
			Registry:     master.Config{AllowLoopback: true, Catalogue: cat, AddrMap: am},
		},
	}, masterd.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 3)
	go func() { m.Run(ctx); done <- struct{}{} }()
	go func() { emu.Run(ctx); done <- struct{}{} }()
	newCtx, newCancel := context.WithCancel(ctx)
	t.Cleanup(func() {
		cancel()
		newCancel()
		<-done
		<-done
		emuNew.Close() // its sockets, if it never ran
	})

	oa := peer.StartOpenArena(t, peer.OpenArenaConfig{
		Hostname: "^1Open^7Arena ^4peer", Master: masterUDP.String(),
		Bots: []string{"sarge", "grism", "kyonshi"},
	})
	s := &scout{
		base: "http://" + m.HTTPAddr().String(),
		oa:   oa.Addr,
		startNew: func() {
			go func() { emuNew.Run(newCtx); done <- struct{}{} }()
			t.Cleanup(func() { newCancel(); <-done })
		},
		stopNew: newCancel,
	}
	s.newcomer, _ = am.Map(emuNew.Table().Pairs()[0].Loopback)
	// Every server listed, and the OpenArena server's players known.
	s.waitAPI(t, "every server listed", func() bool {
		return s.list(t, "per_page=500").Total == worldServers+1
	})
	s.waitAPI(t, "the OpenArena server's players", func() bool {
		var d struct {
			PlayerList []struct{ Name string } `json:"player_list"`
		}
		return s.get(t, "/api/v1/servers/"+url.PathEscape(s.oa.String()), &d) == http.StatusOK && len(d.PlayerList) == 3
	})
	return s
}

// get fetches an API path into v and returns the status.
func (s *scout) get(t *testing.T, path string, v any) int {
	t.Helper()
	r, err := http.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode == http.StatusOK {
		if err := json.NewDecoder(r.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return r.StatusCode
}

func (s *scout) list(t *testing.T, query string) listPage {
	t.Helper()
	var l listPage
	if st := s.get(t, "/api/v1/servers?"+query, &l); st != http.StatusOK {
		t.Fatalf("GET /api/v1/servers?%s: status %d", query, st)
	}
	return l
}

// waitAPI waits for a condition on the master's state, checked every
// 100 ms, at most listedTimeout. It waits on the master, not on time.
func (s *scout) waitAPI(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(listedTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v", what, listedTimeout)
		}
		<-tick.C
	}
}

// rowsAre is a JavaScript condition: the table's rows are these addresses.
func rowsAre(addrs []string) string {
	b, _ := json.Marshal(addrs)
	return fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#servers tbody tr")].map(r => r.dataset.address)) === %q`, string(b))
}

// TestBrowser_ServerList drives the page in headless Chromium against a real
// master with real servers: it lists them in the API's order, sorting and a
// filter change the rows and the URL, the detail panel shows the players
// from the master's re-probe, a refresh keeps the rows in place, and phone
// width does not overflow.
func TestBrowser_ServerList(t *testing.T) {
	s := startScout(t)
	ctx := newBrowser(t, desktopWidth, desktopHeight)

	// The list, by default players then name, as the API orders it.
	def := s.list(t, "")
	do(t, ctx, "loading the page", chromedp.Navigate(s.base+"/"), poll(rowsAre(def.addresses())))
	if got := eval[string](t, ctx, `document.querySelector('th[data-sort="players"]').getAttribute("aria-sort")`); got != "descending" {
		t.Errorf("players heading aria-sort=%q, want descending", got)
	}
	oaRow := fmt.Sprintf(`#servers tbody tr[data-address=%q]`, s.oa.String())
	if name := eval[string](t, ctx, `document.querySelector(`+jsQuote(oaRow+" .qname")+`).textContent`); name != "OpenArena peer" {
		t.Errorf("OpenArena row's name %q, want the colourless %q", name, "OpenArena peer")
	}

	// The ranking: the API's most played servers over 24 hours.
	var ranked listPage
	if st := s.get(t, "/api/v1/ranking?period=24h&per_page=10", &ranked); st != http.StatusOK || len(ranked.Servers) == 0 {
		t.Fatalf("GET /api/v1/ranking: status %d, %d servers", st, len(ranked.Servers))
	}
	do(t, ctx, "opening the ranking", chromedp.Click(`#ranking summary`), poll(fmt.Sprintf(
		`JSON.stringify([...document.querySelectorAll("#ranking tbody tr")].map(r => r.dataset.address)) === %q`,
		jsonString(ranked.addresses()))))

	// The search box: typing filters by name (the API's q), and the URL keeps it.
	found := s.list(t, "q=peer")
	if found.Total != 1 {
		t.Fatalf("q=peer lists %d servers, want the OpenArena one", found.Total)
	}
	do(t, ctx, "searching", chromedp.SendKeys(`input[name="q"]`, "peer"), poll(rowsAre(found.addresses())),
		poll(`location.search === "?q=peer"`))
	// The keyboard: Enter on a row's name opens its panel, Escape closes it
	// and gives the focus back to the name.
	do(t, ctx, "opening with the keyboard", chromedp.Focus(oaRow+" a.open"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`#detail`), poll(`document.activeElement === document.querySelector("#detail")`),
		chromedp.KeyEvent("\x1b"), chromedp.WaitNotVisible(`#detail`),
		poll(`document.activeElement === document.querySelector(`+jsQuote(oaRow+" a.open")+`)`))
	do(t, ctx, "back to the whole list", chromedp.Navigate(s.base+"/"), poll(rowsAre(def.addresses())))

	// Sorting by name: the API's name order, the heading says so, the URL too.
	byName := s.list(t, "sort=name")
	if slices.Equal(byName.addresses(), def.addresses()) {
		t.Fatal("the world sorts the same by name as by players: the sorting check could not fail")
	}
	do(t, ctx, "sorting by name", chromedp.Click(`th[data-sort="name"] button`), poll(rowsAre(byName.addresses())),
		poll(`document.querySelector('th[data-sort="name"]').getAttribute("aria-sort") === "ascending"`))
	do(t, ctx, "sorting by name, descending", chromedp.Click(`th[data-sort="name"] button`),
		poll(rowsAre(s.list(t, "sort=name&order=desc").addresses())))
	if u := eval[string](t, ctx, `location.search`); u != "?sort=name&order=desc" {
		t.Errorf("URL query %q after two clicks on Server, want ?sort=name&order=desc", u)
	}

	// A filter: the OpenArena server's game; rows, URL and share link follow.
	var oaDetail struct{ Game string }
	s.get(t, "/api/v1/servers/"+url.PathEscape(s.oa.String()), &oaDetail)
	filtered := s.list(t, "game="+url.QueryEscape(oaDetail.Game)+"&sort=name&order=desc")
	if filtered.Total == 0 || filtered.Total == def.Total {
		t.Fatalf("game=%s lists %d of %d servers: the filter check could not fail", oaDetail.Game, filtered.Total, def.Total)
	}
	do(t, ctx, "filtering by game", chromedp.SetValue(`select[name="game"]`, oaDetail.Game),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('select[name="game"]').dispatchEvent(new Event("change", {bubbles: true}))`),
		poll(rowsAre(filtered.addresses())))
	q, _ := url.ParseQuery(strings.TrimPrefix(eval[string](t, ctx, `location.search`), "?"))
	if q.Get("game") != oaDetail.Game || q.Get("sort") != "name" {
		t.Errorf("URL query %v, want game=%s and sort=name", q, oaDetail.Game)
	}
	// The shared link reproduces the view in a fresh load.
	share := eval[string](t, ctx, `document.querySelector("#share").href`)
	do(t, ctx, "opening the shared link", chromedp.Navigate(share), poll(rowsAre(filtered.addresses())),
		poll(fmt.Sprintf(`document.querySelector('select[name="game"]').value === %q`, oaDetail.Game)))

	// The detail panel: the players of the master's last getstatus.
	do(t, ctx, "opening the OpenArena server", chromedp.Click(oaRow+" a.open"),
		chromedp.WaitVisible(`#detail`),
		poll(`document.querySelectorAll("#detail-players tbody tr").length === 3`))
	players := eval[[]string](t, ctx, `[...document.querySelectorAll("#detail-players tbody tr td:first-child")].map(td => td.textContent.toLowerCase()).sort()`)
	if strings.Join(players, ",") != "grism,kyonshi,sarge" {
		t.Errorf("detail panel players %v, want the bots grism, kyonshi, sarge", players)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#detail-chart svg").length`); n != 1 {
		t.Errorf("%d history charts, want 1", n)
	}
	screenshot(t, ctx, "web-detail.png", false)
	do(t, ctx, "closing with Escape", chromedp.KeyEvent("\x1b"), chromedp.WaitNotVisible(`#detail`))

	// A refresh keeps the rows in place: the newcomer (more players than
	// any) goes to the bottom, not the top, until the reader re-sorts.
	do(t, ctx, "back to the default view", chromedp.Navigate(s.base+"/"), poll(rowsAre(s.list(t, "").addresses())))
	before := rowAddresses(t, ctx)
	s.startNew()
	s.waitAPI(t, "the newcomer listed first", func() bool {
		a := s.list(t, "").addresses()
		return len(a) > 0 && a[0] == s.newcomer.String()
	})
	do(t, ctx, "refreshing", chromedp.Click(`#refresh`),
		poll(fmt.Sprintf(`document.querySelector('#servers tbody tr[data-address=%q]') !== null`, s.newcomer.String())),
		chromedp.WaitVisible(`#resort`))
	after := rowAddresses(t, ctx)
	if want := append(slices.Clone(before), s.newcomer.String()); !slices.Equal(after, want) {
		t.Errorf("after a refresh the rows are\n%v\nwant the same order with the newcomer last\n%v", after, want)
	}
	do(t, ctx, "re-sorting", chromedp.Click(`#resort-now`), poll(rowsAre(s.list(t, "").addresses())),
		chromedp.WaitNotVisible(`#resort`))
	if first := rowAddresses(t, ctx)[0]; first != s.newcomer.String() {
		t.Errorf("after re-sorting the first row is %s, want the newcomer %s", first, s.newcomer)
	}
	screenshot(t, ctx, "web.png", true)

	// A server that leaves: its row stays where it is, greyed, until a re-sort.
	before = rowAddresses(t, ctx)
	s.stopNew()
	s.waitAPI(t, "the newcomer dropped", func() bool {
		return !slices.Contains(s.list(t, "").addresses(), s.newcomer.String())
	})
	gone := fmt.Sprintf(`#servers tbody tr.gone[data-address=%q]`, s.newcomer.String())
	do(t, ctx, "refreshing after it left", chromedp.Click(`#refresh`), chromedp.WaitVisible(gone), chromedp.WaitVisible(`#resort`))
	if after := rowAddresses(t, ctx); !slices.Equal(after, before) {
		t.Errorf("after a server left the rows are\n%v\nwant them where they were\n%v", after, before)
	}
	do(t, ctx, "re-sorting without it", chromedp.Click(`#resort-now`), poll(rowsAre(s.list(t, "").addresses())))

	// The viewer's country: estimated pings, labelled so, sortable.
	do(t, ctx, "choosing a country", chromedp.SetValue(`select[name="from"]`, "AU"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('select[name="from"]').dispatchEvent(new Event("change", {bubbles: true}))`),
		chromedp.WaitVisible(`th.c-ping`), poll(rowsAre(s.list(t, "from=AU").addresses())))
	var want []string
	estimates := 0
	for _, sv := range s.list(t, "from=AU").Servers {
		w := ""
		if sv.Ping != nil {
			w = fmt.Sprintf("~%.0f ms", *sv.Ping)
			estimates++
		}
		want = append(want, w)
	}
	if estimates == 0 {
		t.Fatal("the API estimates no ping from AU: the ping check could not fail")
	}
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll("#servers tbody td.c-ping")].map(td => td.textContent)`); !slices.Equal(got, want) {
		t.Errorf("ping cells %q, want the API's estimates %q", got, want)
	}
	if title := eval[string](t, ctx, `document.querySelector("#servers tbody td.c-ping span").title`); !strings.Contains(title, "estimate") {
		t.Errorf("a ping cell's title %q does not say it is an estimate", title)
	}
	do(t, ctx, "sorting by ping", chromedp.Click(`th[data-sort="ping"] button`),
		poll(rowsAre(s.list(t, "from=AU&sort=ping").addresses())))

	// Phone width: the page does not scroll sideways, the list is there.
	do(t, ctx, "phone width", chromedp.EmulateViewport(phoneWidth, phoneHeight),
		poll(`window.innerWidth === `+fmt.Sprint(phoneWidth)))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > phoneWidth {
		t.Errorf("at %d px the page is %d px wide: it overflows sideways", phoneWidth, w)
	}
	if r := eval[float64](t, ctx, `document.querySelector("#servers").getBoundingClientRect().right`); r > phoneWidth {
		t.Errorf("at %d px the table ends at %.0f px: columns are cut off", phoneWidth, r)
	}
	if !eval[bool](t, ctx, `getComputedStyle(document.querySelector("th.c-ping")).display !== "none" && getComputedStyle(document.querySelector("th.c-players")).display !== "none"`) {
		t.Error("at phone width the players or ping column is hidden")
	}
	screenshot(t, ctx, "web-phone.png", true)
	do(t, ctx, "phone detail", chromedp.Click(oaRow+" a.open"), chromedp.WaitVisible(`#detail`),
		poll(`document.querySelectorAll("#detail-players tbody tr").length === 3`))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > phoneWidth {
		t.Errorf("at %d px with the detail open the page is %d px wide", phoneWidth, w)
	}
	screenshot(t, ctx, "web-phone-detail.png", false)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestBrowser_PlayersFlagsLinksPhone: the players column shows people of
// the slots with the bots apart, as the API counts them; countries are
// text (no flag emoji, which needs a colour emoji font); a shared
// #server=ADDRESS link lands on the server's own page; at phone width the
// panel's address is one line.
func TestBrowser_PlayersFlagsLinksPhone(t *testing.T) {
	s := startScout(t)
	ctx := newBrowser(t, desktopWidth, desktopHeight)
	def := s.list(t, "")
	do(t, ctx, "loading the page", chromedp.Navigate(s.base+"/"), poll(rowsAre(def.addresses())))
	var oa struct{ Players, Bots, MaxPlayers int }
	var d map[string]any
	s.get(t, "/api/v1/servers/"+url.PathEscape(s.oa.String()), &d)
	oa.Players, oa.Bots, oa.MaxPlayers = int(d["players"].(float64)), int(d["bots"].(float64)), int(d["max_players"].(float64))
	oaRow := fmt.Sprintf(`#servers tbody tr[data-address=%q]`, s.oa.String())
	cell := eval[string](t, ctx, `document.querySelector(`+jsQuote(oaRow+" .c-players")+`).textContent`)
	want := fmt.Sprintf("%d/%d", oa.Players-oa.Bots, oa.MaxPlayers)
	if oa.Bots > 0 {
		want += fmt.Sprintf("+%d bot", oa.Bots)
	}
	if !strings.HasPrefix(cell, want) {
		t.Errorf("OpenArena's players cell %q, want it to start %q (API: %d players, %d bots)", cell, want, oa.Players, oa.Bots)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll("#servers tbody, select")].map(e => e.textContent).join("").match(/[\u{1F1E6}-\u{1F1FF}]/gu)?.length ?? 0`); n != 0 {
		t.Errorf("%d regional-indicator (flag emoji) characters in the page", n)
	}

	do(t, ctx, "following a shared #server= link", chromedp.Navigate("about:blank"),
		chromedp.Navigate(s.base+"/#server="+url.QueryEscape(s.oa.String())),
		poll(`location.pathname === `+jsQuote("/servers/"+s.oa.String())), chromedp.WaitVisible(`#server-name`))
	if title := eval[string](t, ctx, `document.title`); !strings.HasPrefix(title, "OpenArena peer") {
		t.Errorf("the server page's title %q", title)
	}

	phone := newBrowser(t, 390, 844)
	do(t, phone, "opening a panel at phone width", chromedp.Navigate(s.base+"/"), poll(rowsAre(def.addresses())),
		chromedp.Click(oaRow+" a.open"), chromedp.WaitVisible(`#detail-addr`),
		poll(`document.querySelectorAll("#detail-addr code").length === 2`)) // filled once the detail arrives
	// The line may break between the address and the connect command,
	// never inside either.
	lines := eval[[]int](t, phone, `[...document.querySelectorAll("#detail-addr code")].map(c => new Set([...c.getClientRects()].map(x => Math.round(x.top))).size)`)
	if len(lines) != 2 || lines[0] != 1 || lines[1] != 1 {
		t.Errorf("the panel's address and connect command take %v lines at 390 px", lines)
	}
	if w := eval[int](t, phone, `document.querySelector("#detail").scrollWidth - document.querySelector("#detail").clientWidth`); w > 0 {
		t.Errorf("the panel overflows by %d px at 390 px", w)
	}
}

// TestBrowser_GamesSummary: the games section shows the API's summary,
// one row a game.
func TestBrowser_GamesSummary(t *testing.T) {
	s := startScout(t)
	ctx := newBrowser(t, desktopWidth, desktopHeight)
	var g struct {
		Games []struct{ Game string } `json:"games"`
	}
	s.get(t, "/api/v1/games", &g)
	if len(g.Games) == 0 {
		t.Fatal("no games in /api/v1/games")
	}
	var want []string
	for _, x := range g.Games {
		want = append(want, x.Game)
	}
	do(t, ctx, "opening the games section", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#games summary`),
		chromedp.Click(`#games summary`), poll(fmt.Sprintf(
			`JSON.stringify([...document.querySelectorAll("#games tbody tr")].map(r => r.dataset.game)) === %q`, jsonString(want))))
}

// TestBrowser_FindAPlayer: typing part of a bot's name finds it on the
// OpenArena server, linked to that server's page; a person found links to
// their page, rendered by the master, which lists the server they play on.
func TestBrowser_FindAPlayer(t *testing.T) {
	s := startScout(t)
	ctx := newBrowser(t, desktopWidth, desktopHeight)
	do(t, ctx, "searching for a player", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#player-search summary`),
		chromedp.Click(`#player-search summary`), chromedp.SendKeys(`#player-search input`, "sarg"),
		poll(fmt.Sprintf(`[...document.querySelectorAll("#player-search tbody tr")].some(r => r.dataset.address === %q)`, s.oa.String())))
	href := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#player-search tbody tr[data-address=%q] td:nth-child(2) a').getAttribute("href")`, s.oa.String()))
	if href != "/servers/"+s.oa.String() {
		t.Errorf("the result links to %q", href)
	}

	// A person of the world's servers, and their page.
	var person struct {
		NamePlain string `json:"name_plain"`
		Page      string `json:"page"`
	}
	var on string
	for _, a := range s.list(t, "per_page=500").addresses() {
		var d struct {
			PlayerList []struct {
				NamePlain string `json:"name_plain"`
				Page      string `json:"page"`
			} `json:"player_list"`
		}
		s.get(t, "/api/v1/servers/"+url.PathEscape(a), &d)
		for _, p := range d.PlayerList {
			if p.Page != "" && len(p.NamePlain) >= web.MinPlayerQuery && !strings.ContainsAny(p.NamePlain, `"\'`) {
				person.NamePlain, person.Page, on = p.NamePlain, p.Page, a
				break
			}
		}
		if on != "" {
			break
		}
	}
	if on == "" {
		t.Fatal("no person with a page on the world's servers")
	}
	link := fmt.Sprintf(`#player-search tbody a.player[href=%s]`, jsQuote(person.Page))
	eval[string](t, ctx, `document.querySelector("#player-search input").value = ""`)
	do(t, ctx, "searching for a person", chromedp.SendKeys(`#player-search input`, person.NamePlain),
		chromedp.WaitVisible(link), chromedp.Click(link))
	do(t, ctx, "opening their page", chromedp.WaitVisible(`#player-sightings`),
		poll(`location.pathname + location.search === `+jsQuote(person.Page)))
	if title := eval[string](t, ctx, `document.title`); !strings.HasPrefix(title, person.NamePlain+" · ") {
		t.Errorf("the player's page title %q, want it to start with %q", title, person.NamePlain)
	}
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#player-sightings tbody tr")].map(r => r.dataset.address)`)
	if !slices.Contains(rows, on) {
		t.Errorf("%s's page lists %v, not %s where they play", person.NamePlain, rows, on)
	}
	screenshot(t, ctx, "web-player.png", false)
}
