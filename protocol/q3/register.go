package q3

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// registerLen is the size of a register body: address and port.
const registerLen = 4 + 2

// Register is Q3Master's master-to-master registration (seed 001): one
// master passes a game server it heard from to another, which answers
// nothing.
//
//	FF FF FF FF "register" a4 p2
//
// a4 is the IPv4 address and p2 the port, big-endian, with no separator
// (the same byte order as getserversResponse). id's masters do not know
// this command.
type Register struct {
	// Server is the game server being registered: IPv4, a port other
	// than 0.
	Server netip.AddrPort `json:"server"`
}

// AppendBinary appends the message.
func (r Register) AppendBinary(b []byte) ([]byte, error) {
	if !r.Server.Addr().Is4() {
		return b, fmt.Errorf("%s: %w: %v is not an IPv4 address", cmdRegister, ErrInvalid, r.Server)
	}
	if err := checkServer(r.Server, false); err != nil {
		return b, fmt.Errorf("%s: %w", cmdRegister, err)
	}
	out := appendHeader(b, cmdRegister)
	a4 := r.Server.Addr().As4()
	out = append(out, a4[:]...)
	return binary.BigEndian.AppendUint16(out, r.Server.Port()), nil
}

func parseRegister(body []byte) (Message, error) {
	if len(body) < registerLen {
		return nil, fmt.Errorf("%s: %w: %d of %d address bytes", cmdRegister, ErrTruncated, len(body), registerLen)
	}
	if len(body) > registerLen {
		return nil, fmt.Errorf("%s: %w: %d bytes after the address", cmdRegister, ErrMalformed, len(body)-registerLen)
	}
	ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte(body[:4])), binary.BigEndian.Uint16(body[4:6]))
	if err := checkEntry(ap); err != nil {
		return nil, fmt.Errorf("%s: %w", cmdRegister, err)
	}
	return Register{Server: ap}, nil
}
