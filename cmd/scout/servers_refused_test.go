package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// A master on the public Internet that lists local addresses, for the
// terminal test of the rule that keeps a client off its own network
// (servers_refused_linux_test.go). The test binary runs as this master
// in a network namespace of its own, where loopback holds the public
// addresses refusingMaster and refusingServer: TestMain runs it when
// refusingMasterEnv names the file to create once it listens.
const (
	refusingMasterEnv = "SCOUT_TEST_REFUSING_MASTER"
	refusingMaster    = "11.0.0.1:27950"
	refusingServer    = "11.0.0.2:27960"
	// refusingLifetime bounds the helper's life should nobody stop it.
	refusingLifetime = 3 * time.Minute
)

// refusingList is what the master lists: 127.0.0.1 ports 1 to 1796
// (loopback), three private addresses, the master's own host, and one
// public server that answers.
func refusingList() []netip.AddrPort {
	var out []netip.AddrPort
	for p := range 1796 {
		out = append(out, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(p+1)))
	}
	for i := range 3 {
		out = append(out, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 27960))
	}
	return append(out, netip.AddrPortFrom(netip.MustParseAddrPort(refusingMaster).Addr(), 27961), netip.MustParseAddrPort(refusingServer))
}

// runRefusingMaster serves the master and its public server until it is
// killed (or refusingLifetime), having created ready once both listen.
func runRefusingMaster(ready string) int {
	listen := func(a string) *net.UDPConn {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(a)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "refusing master:", err)
			os.Exit(1)
		}
		return c
	}
	mc, sc := listen(refusingMaster), listen(refusingServer)
	list, err := q3.EncodeServersResponses(refusingList(), q3.SplitOptions{End: q3.EndEOT})
	if err != nil {
		fmt.Fprintln(os.Stderr, "refusing master:", err)
		return 1
	}
	go serveUDP(mc, func(msg q3.Message) [][]byte {
		if _, ok := msg.(q3.GetServers); ok {
			return list
		}
		return nil
	})
	go serveUDP(sc, func(msg q3.Message) [][]byte {
		info := infostring.Info{{Key: "gamename", Value: "Quake3Arena"}, {Key: "protocol", Value: "71"},
			{Key: "sv_maxclients", Value: "8"}, {Key: "clients", Value: "1"}, {Key: "hostname", Value: "^2Public ^7server"},
			{Key: "mapname", Value: "q3dm17"}, {Key: "gametype", Value: "0"}}
		var b []byte
		switch m := msg.(type) {
		case q3.GetInfo:
			info = append(info, infostring.Pair{Key: "challenge", Value: m.Challenge})
			b, _ = q3.InfoResponse{Info: info}.AppendBinary(nil)
		case q3.GetStatus:
			info = append(info, infostring.Pair{Key: "challenge", Value: m.Challenge})
			b, _ = q3.StatusResponse{Info: info, Players: []q3.Player{{Name: "^1Someone", Score: 3, Ping: 40}}}.AppendBinary(nil)
		}
		if b == nil {
			return nil
		}
		return [][]byte{b}
	})
	if err := os.WriteFile(ready, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "refusing master:", err)
		return 1
	}
	<-time.After(refusingLifetime)
	return 0
}

// serveUDP answers each datagram on c that parses with what reply gives.
func serveUDP(c *net.UDPConn, reply func(q3.Message) [][]byte) {
	buf := make([]byte, 2048)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		msg, err := q3.Parse(buf[:n])
		if err != nil {
			continue
		}
		for _, b := range reply(msg) {
			c.WriteToUDPAddrPort(b, from)
		}
	}
}
