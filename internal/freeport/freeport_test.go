package freeport

import (
	"net"
	"testing"
)

// A port held by another socket is drawn again, and the next draw binds.
func TestRetry_DrawsAgainWhileInUse(t *testing.T) {
	held := map[uint16]bool{}
	var got []uint16
	err := Retry(t, 3, func(p uint16) error {
		got = append(got, p)
		if p < Low || int(p)+3 >= High {
			t.Errorf("port %d outside [%d, %d-3)", p, Low, High)
		}
		if len(got) == 1 {
			// The first draw: another process holds it.
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(p)})
			if err != nil {
				t.Skipf("port %d: %v", p, err)
			}
			defer c.Close()
			held[p] = true
		}
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(p)})
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil || len(got) != 2 || !held[got[0]] {
		t.Errorf("Retry: %v after draws %v (held %v)", err, got, held)
	}
}

// An error other than a port in use ends the draws at once.
func TestRetry_OtherErrorReturned(t *testing.T) {
	n := 0
	err := Retry(t, 0, func(uint16) error { n++; return net.ErrClosed })
	if err != net.ErrClosed || n != 1 {
		t.Errorf("Retry: %v after %d draws", err, n)
	}
}
