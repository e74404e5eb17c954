package world

import (
	"testing"
)

// FuzzRespond feeds any datagram to a server of every game: no panic, and
// a reply only for a query (answered or challenged), never for garbage.
func FuzzRespond(f *testing.F) {
	for _, seed := range []string{
		"\xff\xff\xff\xffgetinfo xyz", "\xff\xff\xff\xffgetstatus\n", "\xff\xff\xff\xffgetchallenge 1 Quake3Arena",
		"\xff\xffgetInfo\x00\x01\x02\x03\x04", "\xfe\xfd\x09\x10\x20\x30\x40", "\xfe\xfd\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff\xff\x01",
		"\xff\xff\xff\xffTSource Engine Query\x00", "\xff\xff\xff\xffU\xff\xff\xff\xff", "\xff\xff\xff\xffV\x01\x02\x03\x04",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, g := range Games {
			var lim limiter
			out, o := testRes.respond(t0, 0, testServer(g), &lim, prober, b, nil)
			if len(out) > 0 && o != Answered && o != Challenged {
				t.Fatalf("%s: %d replies with outcome %v", g, len(out), o)
			}
			if (o == Answered || o == Challenged) && len(out) == 0 {
				t.Fatalf("%s: outcome %v without a reply", g, o)
			}
		}
	})
}
