package q4

import "time"

// Heartbeat is what a Doom 3 server sends each master to register
// (idAsyncServer::MasterHeartbeat):
//
//	FF FF "heartbeat" 00
//
// It carries nothing else: the master learns the server's address from the
// UDP source and probes it with [GetInfo]. The server sends one at every
// map load (forced) and then every HEARTBEAT_MSEC, 5 minutes, of server
// time, to every configured master (net_master0..4), unless net_LANServer
// is set. Quake 4's registration is not covered by seed 000 (IV.C) and is
// assumed to be the same.
type Heartbeat struct {
	// Trailer holds any bytes after the command word, kept raw; the
	// Doom 3 engine sends none. Nil when empty.
	Trailer []byte `json:"trailer,omitempty"`
}

// HeartbeatInterval is HEARTBEAT_MSEC, the Doom 3 server's period
// between heartbeats.
const HeartbeatInterval = 5 * time.Minute

// ParseHeartbeat decodes a heartbeat packet.
func ParseHeartbeat(b []byte) (Heartbeat, error) {
	rest, err := cutCommand(b, cmdHeartbeat)
	if err != nil {
		return Heartbeat{}, err
	}
	return parseHeartbeatBody(rest), nil
}

func parseHeartbeatBody(b []byte) Heartbeat {
	if len(b) == 0 {
		return Heartbeat{}
	}
	return Heartbeat{Trailer: append([]byte(nil), b...)}
}

// AppendBinary appends the packet to b.
func (m *Heartbeat) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = appendHeader(b, cmdHeartbeat)
	b = append(b, m.Trailer...)
	return checkSize(b, start, "heartbeat")
}
