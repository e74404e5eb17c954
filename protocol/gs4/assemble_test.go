package gs4

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestSplitAssemble_RoundTrip(t *testing.T) {
	want := sampleInfo()
	rowsOnly := smallRules()
	for _, tc := range []struct {
		info Info
		size int
	}{{want, 1400}, {want, interopPacketSize}, {want, 250}, {rowsOnly, 120}, {rowsOnly, 90}} {
		want, size := tc.info, tc.size
		ps, err := want.Split(size)
		if err != nil {
			t.Fatalf("Split(%d): %v", size, err)
		}
		for _, p := range ps {
			if b := mustEncode(t, p); len(b) > size {
				t.Errorf("Split(%d): packet %d is %d bytes", size, p.Number, len(b))
			}
		}
		if !ps[len(ps)-1].Last {
			t.Fatalf("Split(%d): last packet not marked", size)
		}
		// Reverse order and a duplicate: still the same Info.
		in := slices.Clone(ps)
		slices.Reverse(in)
		in = append(in, ps[0])
		got, err := Assemble(in)
		if err != nil {
			t.Fatalf("Split(%d): Assemble: %v", size, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Split(%d) -> Assemble = %#v\nwant %#v", size, got, want)
		}
		if size == 90 && len(ps) < 4 {
			t.Errorf("Split(90) gave only %d packets; want rows split across packets", len(ps))
		}
	}
}

func TestSplit_KeyValuesTooBig(t *testing.T) {
	if _, err := sampleInfo().Split(60); !errors.Is(err, ErrBadField) {
		t.Fatalf("got %v, want ErrBadField", err)
	}
}

// smallRules is sampleInfo with two server keys, so its tables split
// across packets at small sizes.
func smallRules() Info {
	i := sampleInfo()
	i.Rules = i.Rules[:2]
	return i
}

func TestReassembler_Missing(t *testing.T) {
	ps, err := smallRules().Split(90)
	if err != nil {
		t.Fatal(err)
	}
	var r Reassembler
	if err := r.Missing(); err == nil || !errors.Is(err, ErrIncomplete) {
		t.Fatalf("empty: %v", err)
	}
	last := ps[len(ps)-1]
	if done, err := r.Add(last); done || err != nil {
		t.Fatalf("Add(last) = %v, %v", done, err)
	}
	var me *MissingError
	if !errors.As(r.Missing(), &me) || me.LastUnknown || len(me.Numbers) != len(ps)-1 {
		t.Fatalf("Missing = %v", r.Missing())
	}
	if _, err := r.Info(); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Info before complete: %v", err)
	}
	for _, p := range ps[:len(ps)-1] {
		if _, err := r.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if r.Missing() != nil {
		t.Fatal(r.Missing())
	}
	// Gaps below the highest packet, no last packet yet.
	var r2 Reassembler
	r2.Add(ps[2])
	if !errors.As(r2.Missing(), &me) || !me.LastUnknown || !reflect.DeepEqual(me.Numbers, []int{0, 1}) {
		t.Fatalf("Missing = %#v", me)
	}
}

func TestReassembler_Rejects(t *testing.T) {
	ps, err := smallRules().Split(90)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []InfoPacket
		want error
	}{
		{"number beyond MaxPackets", []InfoPacket{{Number: MaxPackets}}, ErrTooManyPackets},
		{"other session", []InfoPacket{ps[0], {SessionID: 7, Number: 1}}, ErrMismatch},
		{"conflicting duplicate", []InfoPacket{ps[0], {SessionID: ps[0].SessionID}}, ErrMismatch},
		{"two last packets", []InfoPacket{{Number: 1, Last: true}, {Number: 2, Last: true}}, ErrMismatch},
		{"packet beyond last", []InfoPacket{{Number: 1, Last: true}, {Number: 2}}, ErrMismatch},
		{"last before a higher packet", []InfoPacket{{Number: 3}, {Number: 1, Last: true}}, ErrMismatch},
		{"rows beyond MaxRows", []InfoPacket{{Last: true, Sections: []Section{{Kind: SectionPlayers, Columns: []Column{{Field: "player_", Offset: 255, Values: []string{"a", "b"}}}}}}}, ErrTooManyRows},
		{"missing packet", []InfoPacket{ps[0], ps[len(ps)-1]}, ErrIncomplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Assemble(tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNamedRules(t *testing.T) {
	got := sampleInfo().NamedRules()
	byKey := map[string]NamedRule{}
	for _, r := range got {
		byKey[r.Key] = r
	}
	for key, name := range map[string]string{"p1073741825": "map", "p1073741826": "gametype", "s32779": "gamemode", "hostname": ""} {
		if r := byKey[key]; r.Name != name || r.Key != key {
			t.Errorf("%s: got %+v, want name %q", key, r, name)
		}
	}
	if got[0].Value != "Scout UT3 Test" {
		t.Errorf("values lost: %+v", got[0])
	}
}
