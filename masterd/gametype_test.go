package masterd

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q4"
)

// A Quake 4 server on a team mode (si_gameType "Team DM") is listed and
// its gametype reaches the JSON list as sent, space included.
func TestHTTP_Quake4GametypeWithSpace(t *testing.T) {
	m, err := NewMaster(t0, Config{Listen: []netip.AddrPort{ap("127.0.0.1:0")}}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	srv := ap("203.0.113.44:28004")
	out := m.Handler.HandlePacket(now, srv, []byte("\xff\xffheartbeat\x00"), nil)
	if len(out) != 1 {
		t.Fatalf("heartbeat -> %v", out)
	}
	gi, err := q4.ParseGetInfo(out[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	rep := &q4.InfoResponse{
		Challenge: gi.Challenge, Protocol: q4.VersionOf(0x00020055),
		Info: infostring.Info{
			{Key: "si_name", Value: "team server"}, {Key: "si_gameType", Value: "Team DM"},
			{Key: "si_maxPlayers", Value: "16"}, {Key: "si_map", Value: "mp/q4dm1"},
		},
		Players: []q4.Player{{ID: 0, Ping: 40, Rate: 25000, Name: "a"}},
	}
	info, err := rep.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Handler.HandlePacket(now, srv, info, nil)
	ts := httptest.NewServer(m.HTTPHandler())
	defer ts.Close()
	r, err := ts.Client().Get(ts.URL + "/servers?game=Quake4")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	var list []ServerJSON
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Gametype != "Team DM" || list[0].Address != srv.String() {
		t.Fatalf("/servers?game=Quake4: %s", b)
	}
}
