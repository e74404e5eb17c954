package master

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMaster_HTTP(t *testing.T) {
	o, _ := ParseArgs([]string{"-l", "127.0.0.1"})
	set, err := o.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMaster(t0, set, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &hfix{h: m.Handler, now: time.Now()}
	f.list(t, ap("203.0.113.5:27960"))
	f.in(client, oob("getservers 71 empty full"))
	f.in(client, []byte("garbage"))
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
	metrics := get("/metrics")
	for _, want := range []string{
		`scout_master_servers_listed_by_game{game="Quake3Arena"} 1`,
		`scout_master_dropped_total{reason="not_connectionless"} 1`,
		`scout_master_packets_received_total{kind="getservers"} 1`,
		`scout_master_packets_sent_total{kind="getserversResponse"} 1`,
		`scout_master_answers_total 1`,
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
