package loadgen

import (
	"errors"
	"testing"

	"github.com/scout-discovery/scout/protocol/q3"
)

// FuzzCountEntries: countEntries never panics, and a datagram it accepts
// is a getserversResponse that q3.Parse, the reference decoder, reads with
// the same number of servers and the same end marker.
func FuzzCountEntries(f *testing.F) {
	for _, every := range []bool{false, true} {
		pkts, err := q3.EncodeServersResponses(servers(400), q3.SplitOptions{End: q3.EndEOT, EndOnEvery: every, MaxBytes: 1400})
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range pkts {
			f.Add(p)
		}
	}
	f.Add([]byte(responseHeader))
	f.Add([]byte(responseHeader + eotMarker + "x"))
	f.Add([]byte(responseHeader + "\\abc"))
	f.Add([]byte(q3.Prefix + "getserversExtResponse\\EOT\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, p []byte) {
		n, eot, err := countEntries(p)
		if errors.Is(err, errNotList) {
			if n != 0 || eot {
				t.Fatalf("not a list, yet %d entries, eot %v", n, eot)
			}
			return
		}
		if err != nil || n < 0 {
			if n < 0 {
				t.Fatalf("negative count %d", n)
			}
			return
		}
		m, perr := q3.Parse(p)
		if perr != nil {
			t.Fatalf("accepted %q (%d entries, eot %v); reference: %v", p, n, eot, perr)
		}
		r, ok := m.(q3.ServersResponse)
		if !ok || r.Ext || len(r.Servers) != n || (r.End == q3.EndEOT) != eot {
			t.Fatalf("%q: %d entries, eot %v; reference %+v", p, n, eot, m)
		}
	})
}
