package steammaster

import (
	"reflect"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

// seedVectors adds every packet in testdata: qstat's query and our goldens.
func seedVectors(f *testing.F) {
	for _, v := range xxd.ReadGlob(f, "testdata/*.hex") {
		f.Add(v.Bytes)
	}
}

func FuzzParseQuery(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseQuery(b)
		if err != nil {
			return
		}
		enc, err := q.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", q, err)
		}
		q2, err := ParseQuery(enc)
		if err != nil || !reflect.DeepEqual(q, q2) {
			t.Fatalf("round trip changed %#v to %#v (%v)", q, q2, err)
		}
	})
}

// FuzzParseReply: a reply that breaks off mid-entry comes with
// ErrTruncated and what parsed before; that too must round-trip.
func FuzzParseReply(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseReply(b)
		if err != nil && len(r.Servers) == 0 {
			return
		}
		enc, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", r, err)
		}
		r2, err := ParseReply(enc)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed %#v to %#v (%v)", r, r2, err)
		}
	})
}
