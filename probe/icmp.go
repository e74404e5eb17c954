package probe

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrUnreachable: an ICMP destination unreachable answered a request in
// flight (see the package doc's "ICMP errors" for when one is believed).
// The error is an [*UnreachableError], which says what was unreachable.
var ErrUnreachable = errors.New("unreachable")

// ICMPKind is what an ICMP destination unreachable says could not be
// reached. The zero value is an ICMP error that is no destination
// unreachable (time exceeded, fragmentation needed, packet too big,
// parameter problem): the engine does not act on those.
type ICMPKind uint8

// The kinds of destination unreachable.
const (
	NotUnreachable        ICMPKind = iota
	UnreachableNet                 // no route to the network (ICMP 3/0, 6, 11; ICMPv6 1/0, 2)
	UnreachableHost                // the host (ICMP 3/1, 5, 7, 8, 12; ICMPv6 1/3)
	UnreachableProtocol            // UDP itself (ICMP 3/2)
	UnreachablePort                // nothing listens on the port (ICMP 3/3; ICMPv6 1/4)
	UnreachableProhibited          // a filter refused it (ICMP 3/9, 10, 13-15; ICMPv6 1/1, 5, 6)
	UnreachableOther               // a destination unreachable code not listed above
)

var icmpKindNames = [...]string{"not unreachable", "net", "host", "protocol", "port", "prohibited", "other"}

func (k ICMPKind) String() string {
	if int(k) < len(icmpKindNames) {
		return icmpKindNames[k]
	}
	return fmt.Sprintf("ICMPKind(%d)", uint8(k))
}

// classifyICMP returns the kind of an ICMP (v6 false) or ICMPv6 (v6 true)
// error of type typ and code code.
func classifyICMP(v6 bool, typ, code uint8) ICMPKind {
	if v6 {
		if typ != 1 { // destination unreachable
			return NotUnreachable
		}
		switch code {
		case 0, 2:
			return UnreachableNet
		case 3:
			return UnreachableHost
		case 4:
			return UnreachablePort
		case 1, 5, 6:
			return UnreachableProhibited
		}
		return UnreachableOther
	}
	if typ != 3 {
		return NotUnreachable
	}
	switch code {
	case 0, 6, 11:
		return UnreachableNet
	case 1, 5, 7, 8, 12:
		return UnreachableHost
	case 2:
		return UnreachableProtocol
	case 3:
		return UnreachablePort
	case 4: // fragmentation needed: a path MTU message, not unreachability
		return NotUnreachable
	case 9, 10, 13, 14, 15:
		return UnreachableProhibited
	}
	return UnreachableOther
}

// ICMPError is one ICMP error the kernel queued for the socket.
type ICMPError struct {
	// To is the destination of the datagram that drew the error.
	To netip.AddrPort
	// From is the address the ICMP came from (the offender: the
	// destination itself for a closed port, a router for an unreachable
	// network); invalid when the kernel did not say.
	From netip.Addr
	// V6 is set for ICMPv6; Type and Code are the ICMP header's.
	V6         bool
	Type, Code uint8
	// Quote is the start of the datagram's UDP payload as the ICMP quoted
	// it: possibly empty (a router need quote no more than the UDP header).
	Quote []byte
}

// Kind classifies e.
func (e ICMPError) Kind() ICMPKind { return classifyICMP(e.V6, e.Type, e.Code) }

// UnreachableError is the error of a request ended by an ICMP destination
// unreachable. errors.Is(err, ErrUnreachable) holds for it.
type UnreachableError struct {
	Step string // the request it ended ("getinfo")
	Kind ICMPKind
	From netip.Addr // who sent the ICMP, when not the server's own address
}

func (e *UnreachableError) Error() string {
	s := fmt.Sprintf("%s: %v: %v", e.Step, ErrUnreachable, e.Kind)
	if e.From.IsValid() {
		s += fmt.Sprintf(" (ICMP from %v)", e.From)
	}
	return s
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// ICMPConn is a Conn that also reports the ICMP errors the kernel received
// for the datagrams it sent (on Linux, with IP_RECVERR). Run, Stream and
// Broadcast use them when conn has these methods; [Wrap] returns one where
// the platform allows.
type ICMPConn interface {
	Conn
	// ReadICMP returns the ICMP errors queued for the socket, oldest first,
	// without waiting: nil when there are none. It may be called from
	// another goroutine than the one reading.
	ReadICMP() ([]ICMPError, error)
	// ICMPReported reports whether err, returned by a read or a write,
	// only says that an ICMP error is queued: the socket lives on, the
	// errors are read with ReadICMP, and a write that failed so did not
	// send its datagram and may be repeated.
	ICMPReported(err error) bool
}

// Features says what a Conn returned by [Wrap] does on this platform.
type Features struct {
	// KernelTimestamps: datagrams are timed by the kernel's receive
	// timestamp (see [KernelTimestamps]).
	KernelTimestamps bool
	// ICMPErrors: the Conn is an [ICMPConn], so a request to a closed port
	// ends with [ErrUnreachable] instead of timing out.
	ICMPErrors bool
}

// Wrap returns c as the Conn a Prober should read: on Linux with the
// kernel's receive timestamps (SO_TIMESTAMPNS) and ICMP errors (IP_RECVERR
// and IPV6_RECVERR on the socket, read from its error queue); elsewhere
// what [KernelTimestamps] returns. Run must be the only reader of the
// result, as of any Conn; c must not be read otherwise.
func Wrap(c *net.UDPConn) (Conn, Features) { return wrap(c) }

// portableWrap is what Wrap returns where the platform gives neither
// kernel timestamps nor ICMP errors to an unconnected socket: c itself,
// each datagram timed at its read, a closed port timing out. Every
// platform but Linux uses it; its tests run it on Linux too.
func portableWrap(c *net.UDPConn) (Conn, Features) { return c, Features{} }

// icmp handles an ICMP error the kernel reported for a datagram sent to
// e.To. It is weaker evidence than a reply (anyone on the path, or anyone
// who can guess the socket's port, can send one), so it ends a target
// only when all of these hold, and is otherwise counted as unmatched and
// changes nothing:
//
//   - it is a destination unreachable (ICMP type 3 except code 4,
//     fragmentation needed; ICMPv6 type 1), not a transient error such as
//     time exceeded;
//   - e.To is exactly the address and port of a target that is neither
//     finished nor a broadcast (whose replies may come from anywhere);
//   - one of the target's requests is in flight: written, not answered
//     or given up;
//   - when the ICMP quotes the datagram's payload (Linux and most hosts
//     quote it whole, routers may quote none of it), the quote is the
//     start of the latest datagram of one of those requests, tokens
//     included.
//
// It then ends every open request of the target at once, without a retry,
// with an [*UnreachableError]; the window slots they held are free for
// the next targets. Later ICMP errors for the target are unmatched.
func (s *session) icmp(e ICMPError) {
	s.counts.ICMPErrors++
	kind := e.Kind()
	t := s.byAddr[unmap(e.To)]
	if kind == NotUnreachable || t == nil || t.done || t.broadcast || !quotesInFlight(t, e.Quote) {
		s.counts.ICMPUnmatched++
		return
	}
	s.counts.Unreachable++
	var from netip.Addr
	if f := e.From.Unmap(); f.IsValid() && f != t.addr.Addr() {
		from = f
	}
	for len(t.reqs) > 0 && !t.done {
		r := t.reqs[0]
		s.fail(r, &UnreachableError{Step: t.d.stepName(&r.st), Kind: kind, From: from})
	}
}

// quotesInFlight reports whether t has a request in flight whose latest
// datagram begins with quote (any in-flight request, when quote is empty).
func quotesInFlight(t *target, quote []byte) bool {
	for _, r := range t.reqs {
		if r.sent != nil && bytes.HasPrefix(r.sent, quote) {
			return true
		}
	}
	return false
}
