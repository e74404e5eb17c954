package web

import (
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
)

// benchAPI is an API over a registry of n restored servers (listed at
// once) with one history sample each, no limits.
func benchAPI(b *testing.B, n int) *API {
	b.Helper()
	ch, err := master.NewChallenger(master.DefaultRotationPeriod, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := master.NewRegistry(master.Config{MaxServersPerAddress: -1}, ch)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	hist := history.New()
	servers := make([]master.Server, n)
	for i := range servers {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{81, 169, byte(i >> 8), byte(i)}), 27960)
		servers[i] = master.Server{Addr: a, Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68,
			Gametype: "0", Clients: i % 17, MaxClients: 16, FirstSeen: now, Info: []master.Pair{
				{Key: "hostname", Value: fmt.Sprintf("^1Server ^7number %d", i)}, {Key: "mapname", Value: "q3dm17"},
				{Key: "sv_maxclients", Value: "16"}, {Key: "protocol", Value: "68"}, {Key: "gamename", Value: "Quake3Arena"}}}
		hist.Record(a, now, i%17)
	}
	if got, skipped := reg.Restore(now, servers); got != n {
		b.Fatalf("%d restored, %v", got, skipped[:1])
	}
	api, err := New(Config{Rate: -1, MaxRate: -1}, Deps{Registry: reg, History: hist})
	if err != nil {
		b.Fatal(err)
	}
	return api
}

// BenchmarkView_Build5000 is what a change to the listing costs the API
// once per MinRefresh: the registry's 5,000 servers copied, geolocated and
// made rows (go test -run '^$' -bench . ./web).
func BenchmarkView_Build5000(b *testing.B) {
	api := benchAPI(b, 5000)
	api.current(time.Now()) // the geolocation cache filled, as after the first view
	b.ResetTimer()
	for range b.N {
		api.view.Store(nil)
		api.current(time.Now())
	}
}

// BenchmarkList_Encode500 is a query's first answer in a view: 5,000 rows
// filtered and sorted, a page of 500 encoded (then cached).
func BenchmarkList_Encode500(b *testing.B) {
	api := benchAPI(b, 5000)
	v := api.current(time.Now())
	q, _ := ParseListQuery("per_page=500")
	b.ResetTimer()
	for range b.N {
		v.encodeList(&q)
	}
}

func serveBench(b *testing.B, hdr ...string) {
	api := benchAPI(b, 5000)
	req := httptest.NewRequest("GET", "/api/v1/servers?per_page=500", nil)
	req.RemoteAddr = "192.0.2.1:1234"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req) // the first: encodes and caches
	if etag := w.Header().Get("ETag"); len(hdr) > 0 && hdr[0] == "If-None-Match" {
		req.Header.Set("If-None-Match", etag)
	}
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		if w.Code != 200 && w.Code != 304 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkList_Cached500Gzip: a page of 500 from the view's cache, gzip.
func BenchmarkList_Cached500Gzip(b *testing.B) { serveBench(b, "Accept-Encoding", "gzip") }

// BenchmarkList_NotModified: a tracker's conditional request (304).
func BenchmarkList_NotModified(b *testing.B) { serveBench(b, "If-None-Match", "") }
