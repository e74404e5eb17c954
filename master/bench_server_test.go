package master

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// benchServers is the list size the master is compared with dpmaster at:
// dpmaster 2.3 answers it in 26
// packets (35.6 KB) for 0.23-0.31 ms of CPU.
const benchServers = 5000

// BenchmarkMaster_FullList5000 answers "getservers 68 empty full" for a
// list of 5,000 verified servers:
//
//   - handler: Handler.HandlePacket alone, the datagrams built but not
//     sent; no flood protection or byte budget, one client.
//
// The socket half (a real master on 127.0.0.1) is masterd's
// BenchmarkMaster_FullList5000/socket.
func BenchmarkMaster_FullList5000(b *testing.B) {
	req, err := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("handler", func(b *testing.B) { benchHandler(b, req) })
}

func benchHandler(b *testing.B, req []byte) {
	chal, err := NewChallenger(DefaultRotationPeriod, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := NewRegistry(Config{MaxServersPerAddress: -1}, chal)
	if err != nil {
		b.Fatal(err)
	}
	h, err := NewHandler(HandlerConfig{EndOnLastOnly: true}, HandlerDeps{Registry: reg}) // dpmaster 2.x's layout, as measured against it
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hb, _ := q3.Heartbeat{Tag: "QuakeArena-1"}.AppendBinary(nil)
	var out []Outgoing
	for i := range benchServers {
		from := netip.MustParseAddrPort(fmt.Sprintf("198.%d.%d.%d:27960", 51+i/62500, (i/250)%250, i%250+1))
		out = h.HandlePacket(now, from, hb, out[:0])
		challenge := ""
		for _, o := range out {
			if m, err := q3.Parse(o.Payload); err == nil {
				if gi, ok := m.(q3.GetInfo); ok && o.To == from {
					challenge = gi.Challenge
				}
			}
		}
		if challenge == "" {
			b.Fatalf("server %d: no getinfo in %d datagrams", i, len(out))
		}
		info, err := q3.InfoResponse{Info: infostring.Info{
			{Key: "challenge", Value: challenge}, {Key: "protocol", Value: "68"},
			{Key: "hostname", Value: "bench " + strconv.Itoa(i)}, {Key: "mapname", Value: "q3dm17"},
			{Key: "clients", Value: strconv.Itoa(i % 17)}, {Key: "sv_maxclients", Value: "16"}, {Key: "gametype", Value: "0"},
		}}.AppendBinary(nil)
		if err != nil {
			b.Fatal(err)
		}
		out = h.HandlePacket(now, from, info, out[:0])
	}
	if listed, _ := reg.Counts(); listed != benchServers {
		b.Fatalf("%d servers listed, want %d", listed, benchServers)
	}
	client := netip.MustParseAddrPort("203.0.113.9:27960")
	out = h.HandlePacket(now, client, req, out[:0])
	packets, bytes, entries := 0, 0, 0
	for _, o := range out {
		m, err := q3.Parse(o.Payload)
		if err != nil {
			b.Fatal(err)
		}
		entries += len(m.(q3.ServersResponse).Servers)
		packets++
		bytes += len(o.Payload)
	}
	if entries != benchServers {
		b.Fatalf("answer holds %d servers, want %d", entries, benchServers)
	}
	b.ReportAllocs()
	for b.Loop() {
		out = h.HandlePacket(now, client, req, out[:0])
	}
	b.ReportMetric(float64(packets), "packets/answer")
	b.ReportMetric(float64(bytes), "bytes/answer")
}
