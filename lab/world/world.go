package world

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
)

// FormatVersion is the version of the world file this package reads and
// writes.
const FormatVersion = 1

// Limits of a world, each checked by [World.Validate].
const (
	// MaxServers bounds a world. One socket per server; 50,000 is the
	// largest world the emulator is designed for, with room to spare.
	MaxServers = 100_000
	// MaxClients bounds a server's max clients: Quake III's MAX_CLIENTS
	// (64); Quake 4 has 32 and Source 255, but no emulated server needs
	// more than 64.
	MaxClients = 64
	// MaxNameLen bounds host names, map names, game types and player
	// names, well within every game's field (Q3's MAX_INFO_VALUE is 1024).
	MaxNameLen = 63
	// MaxRTT bounds the added round-trip time of a server.
	MaxRTT = 10 * time.Second
	// MaxFileBytes bounds what [Read] accepts (about 2 KB per server).
	MaxFileBytes = MaxServers * 2048
)

// ErrInvalid reports a world that breaks a rule of [World.Validate].
var ErrInvalid = errors.New("world: invalid world")

// Game is the kind of game server emulated. It fixes the protocol family,
// the queries answered and the heartbeats sent.
type Game string

// The games the emulator speaks.
const (
	Q3A  Game = "q3a"  // Quake III Arena 1.32, protocol 68
	ET   Game = "et"   // Wolfenstein: Enemy Territory 2.60b, protocol 84
	RTCW Game = "rtcw" // Return to Castle Wolfenstein 1.41, protocol 60
	OA   Game = "oa"   // OpenArena 0.8.8 on ioquake3 1.36, protocol 71
	Q4   Game = "q4"   // Quake 4 1.4.2, protocol 2.85
	UT3  Game = "ut3"  // Unreal Tournament 3, GameSpy 4 query
	CSS  Game = "css"  // Counter-Strike: Source, A2S protocol 17
)

// Games lists every Game, in a fixed order.
var Games = []Game{Q3A, ET, RTCW, OA, Q4, UT3, CSS}

// family is the wire protocol a game speaks.
type family uint8

const (
	familyQ3 family = iota + 1
	familyQ4
	familyGS4
	familyA2S
)

func (g Game) family() family {
	switch g {
	case Q3A, ET, RTCW, OA:
		return familyQ3
	case Q4:
		return familyQ4
	case UT3:
		return familyGS4
	case CSS:
		return familyA2S
	}
	return 0
}

// World is a set of emulated servers: the unit a world file holds.
type World struct {
	// Version is FormatVersion.
	Version int `json:"version"`
	// Seed is the generator seed the world came from; 0 for a world
	// built otherwise. The emulator also seeds its jitter and loss from it.
	Seed uint64 `json:"seed,omitempty"`
	// Servers in any order. Public addresses and (non-zero) loopback
	// addresses are unique.
	Servers []Server `json:"servers"`
}

// Server is one emulated game server.
type Server struct {
	// Public is the server's identity: the address a master lists and a
	// client shows. A public unicast IPv4 address (see [IsPublic]).
	Public netip.AddrPort `json:"public"`
	// Loopback is where its socket is bound: 127.0.0.0/8 outside
	// 127.0.0.0/16. Port 0 lets the kernel choose; the emulator also falls
	// back to a kernel-chosen port when the given one is taken, and its
	// Table reports the ports actually used.
	Loopback netip.AddrPort `json:"loopback"`
	// Game is what the server runs.
	Game Game `json:"game"`
	// Protocol is the protocol number the server announces; 0 means the
	// game's usual one (68, 84, 60, 71; Quake 4 2.85 as 0x20055; Source 17).
	Protocol int `json:"protocol,omitempty"`
	// Hostname is the server's name (sv_hostname, si_name, hostname).
	Hostname string `json:"hostname"`
	// Map is the current map.
	Map string `json:"map"`
	// GameType is the game type as the game writes it: a number for the
	// Quake III family ("0" free for all), "DM"/"Team DM"/... for Quake 4,
	// the game class for UT3 ("UTGame.UTDeathmatch"), a keyword for
	// Source.
	GameType string `json:"gametype,omitempty"`
	// MaxClients is the number of player slots, 1 to MaxClients.
	MaxClients int `json:"max_clients"`
	// Players are the connected clients, bots included; at most
	// MaxClients.
	Players []Player `json:"players,omitempty"`
	// Link is the network between the client's place and the server.
	Link Link `json:"link"`
	// Country is the ISO 3166-1 alpha-2 code of the server's place ("DE");
	// empty when unknown. The generator leaves it empty: worlds built from
	// real data (lab/demo's) fill it.
	Country string `json:"country,omitempty"`
	// ASN is the autonomous system announcing Public; 0 when unknown.
	ASN uint32 `json:"asn,omitempty"`
	// Gone servers answer their masters only: they registered, and went
	// away before the master's listing expired (a crash since the last
	// heartbeat). A client sees a listed server that never answers.
	Gone bool `json:"gone,omitempty"`
}

// Player is one connected client.
type Player struct {
	// Name as the game shows it, colour codes and all; no '"', '\\',
	// newline or NUL.
	Name string `json:"name"`
	// Score is the player's score (frags).
	Score int `json:"score"`
	// Ping is the player's ping to the server in milliseconds; bots
	// report 0 whatever this says.
	Ping int `json:"ping"`
	// Bot marks a bot.
	Bot bool `json:"bot,omitempty"`
}

// Link is the emulated network path between the client's place and a
// server. The emulator applies it to every datagram the server sends.
//
//   - RTT is the round-trip time added to each query: the whole of it is
//     added to the reply (the emulator sees the request when it arrives
//     on loopback, so delaying the reply by RTT makes the client measure
//     RTT plus loopback's few microseconds). Heartbeats, which travel one
//     way, are delayed by RTT/2.
//   - Jitter adds to each datagram's delay an extra drawn uniformly from
//     [0, Jitter): it only ever lengthens the RTT, so RTT is the floor a
//     client can measure.
//   - Loss is the probability that a reply datagram is lost, drawn
//     independently for each datagram (each packet of a split reply on
//     its own). It stands for the loss of the request or of the reply.
//     Heartbeats are never lost: a world's master list is complete, so a
//     discovery benchmark measures the client, not the registration.
type Link struct {
	RTT    Duration `json:"rtt"`
	Jitter Duration `json:"jitter,omitempty"`
	Loss   float64  `json:"loss,omitempty"`
}

// Duration is a time.Duration written in JSON as text ("25ms").
type Duration time.Duration

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration written by MarshalText.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Validate checks the world against the rules stated on its fields and on
// the limits above. Errors wrap ErrInvalid and name the server.
func (w *World) Validate() error {
	if w.Version != FormatVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrInvalid, w.Version, FormatVersion)
	}
	if len(w.Servers) > MaxServers {
		return fmt.Errorf("%w: %d servers, more than %d", ErrInvalid, len(w.Servers), MaxServers)
	}
	pubs := make(map[netip.AddrPort]bool, len(w.Servers))
	los := make(map[netip.AddrPort]bool, len(w.Servers))
	for i := range w.Servers {
		s := &w.Servers[i]
		if err := s.validate(); err != nil {
			return fmt.Errorf("%w: server %d (%v): %v", ErrInvalid, i, s.Public, err)
		}
		if pubs[s.Public] {
			return fmt.Errorf("%w: public address %v used twice", ErrInvalid, s.Public)
		}
		pubs[s.Public] = true
		if s.Loopback.Port() != 0 {
			if los[s.Loopback] {
				return fmt.Errorf("%w: loopback address %v used twice", ErrInvalid, s.Loopback)
			}
			los[s.Loopback] = true
		}
	}
	return nil
}

func (s *Server) validate() error {
	switch {
	case !IsPublic(s.Public.Addr()) || s.Public.Port() == 0:
		return fmt.Errorf("public address is not a public unicast IPv4 address with a port")
	case !emulatorNet.Contains(s.Loopback.Addr()) || reservedNet.Contains(s.Loopback.Addr()):
		return fmt.Errorf("loopback address %v is not in 127.0.0.0/8 outside 127.0.0.0/16", s.Loopback)
	case s.Game.family() == 0:
		return fmt.Errorf("unknown game %q", s.Game)
	case s.MaxClients < 1 || s.MaxClients > MaxClients:
		return fmt.Errorf("max clients %d not in 1..%d", s.MaxClients, MaxClients)
	case len(s.Players) > s.MaxClients:
		return fmt.Errorf("%d players for %d slots", len(s.Players), s.MaxClients)
	case s.Link.RTT < 0 || time.Duration(s.Link.RTT) > MaxRTT || s.Link.Jitter < 0 || time.Duration(s.Link.Jitter) > MaxRTT:
		return fmt.Errorf("rtt %v / jitter %v not in 0..%v", s.Link.RTT, s.Link.Jitter, MaxRTT)
	case !(s.Link.Loss >= 0 && s.Link.Loss <= 1):
		return fmt.Errorf("loss %v not in 0..1", s.Link.Loss)
	case s.Protocol < 0:
		return fmt.Errorf("negative protocol")
	}
	for _, f := range []struct{ name, v string }{{"hostname", s.Hostname}, {"map", s.Map}, {"gametype", s.GameType}} {
		if err := checkText(f.v); err != nil {
			return fmt.Errorf("%s: %v", f.name, err)
		}
	}
	if s.Map == "" {
		return fmt.Errorf("empty map")
	}
	for _, p := range s.Players {
		if err := checkText(p.Name); err != nil || p.Name == "" {
			return fmt.Errorf("player name %q: %v", p.Name, err)
		}
		if p.Ping < 0 || p.Ping > 999 {
			return fmt.Errorf("player ping %d not in 0..999", p.Ping)
		}
	}
	return nil
}

// checkText refuses what one of the wire formats cannot carry: the Q3 info
// string separators and quote, and the NUL every other format ends strings
// with.
func checkText(v string) error {
	if len(v) > MaxNameLen {
		return fmt.Errorf("longer than %d bytes", MaxNameLen)
	}
	if strings.ContainsAny(v, "\\\";\x00\n\r") {
		return fmt.Errorf("contains one of \\ \" ; NUL CR LF")
	}
	return nil
}

// Table returns the public <-> loopback table of the world's servers, as
// given in the world (see [Emulator.Table] for the ports actually bound).
// Servers with loopback port 0 are left out.
func (w *World) Table() (*loopnat.Table, error) {
	pairs := make([]loopnat.Pair, 0, len(w.Servers))
	for _, s := range w.Servers {
		if s.Loopback.Port() != 0 {
			pairs = append(pairs, loopnat.Pair{Public: s.Public, Loopback: s.Loopback})
		}
	}
	return loopnat.New(pairs)
}

// Read reads and validates a world file.
func Read(r io.Reader) (World, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return World{}, err
	}
	if len(b) > MaxFileBytes {
		return World{}, fmt.Errorf("%w: file larger than %d bytes", ErrInvalid, MaxFileBytes)
	}
	var w World
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return World{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return w, w.Validate()
}

// Write writes the world as indented JSON, one server per few lines.
func (w *World) Write(out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", " ")
	return enc.Encode(w)
}
