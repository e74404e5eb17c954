package masterd

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

func TestMaster_HTTP(t *testing.T) {
	m, err := NewMaster(t0, Config{Listen: []netip.AddrPort{ap("127.0.0.1:0")}}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	listQ3(t, m.Handler, now, ap("203.0.113.5:27960"))
	client := ap("198.51.100.7:27960")
	m.Handler.HandlePacket(now, client, []byte(q3.Prefix+"getservers 71 empty full"), nil)
	m.Handler.HandlePacket(now, client, []byte("garbage"), nil)
	ts := httptest.NewServer(m.HTTPHandler())
	defer ts.Close()
	get := func(path string) string {
		r, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d", path, r.StatusCode)
		}
		return string(b)
	}
	if get("/healthz") != "ok\n" {
		t.Error("healthz")
	}
	// The API, once plain and once conditional: a view, an encoding, a 304.
	r, err := ts.Client().Get(ts.URL + "/api/v1/servers")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("/api/v1/servers: %v %v", r, err)
	}
	r.Body.Close()
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/servers", nil)
	req.Header.Set("If-None-Match", r.Header.Get("ETag"))
	if r2, err := ts.Client().Do(req); err != nil || r2.StatusCode != 304 {
		t.Fatalf("conditional: %v %v", r2, err)
	} else {
		r2.Body.Close()
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`scout_master_servers_listed_by_game{game="Quake3Arena"} 1`,
		`scout_master_servers_listed_by_gametype{game="Quake3Arena",gametype="0",protocol="71"} 1`,
		`scout_master_dropped_total{reason="not_connectionless"} 1`,
		`scout_master_packets_received_total{kind="getservers"} 1`,
		`scout_master_packets_sent_total{kind="getserversResponse"} 1`,
		`scout_master_answers_total 1`,
		`scout_master_landmark_pings_total{result="stray"} 0`,
		`scout_master_history_servers 1`,
		`scout_master_api_not_modified_total 1`,
		`scout_master_api_views_built_total 1`,
		`scout_master_api_encoded_total 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	var list []ServerJSON
	json.Unmarshal([]byte(get("/servers?game=Quake3Arena")), &list)
	if len(list) != 1 || list[0].Address != "203.0.113.5:27960" || list[0].Info["hostname"] != "oa-peer-28960" {
		t.Fatalf("/servers %+v", list)
	}
	json.Unmarshal([]byte(get("/servers?game=et")), &list)
	if len(list) != 0 {
		t.Fatalf("/servers?game=et %+v", list)
	}
}
