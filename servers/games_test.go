package servers

import (
	"bytes"
	"testing"

	"github.com/scout-discovery/scout/discover"
)

func TestWarnLimits_NamesTheMasterAndTheBound(t *testing.T) {
	var b bytes.Buffer
	warnLimits(discover.Summary{Masters: []discover.MasterReport{
		{Name: "ok", End: discover.EndMarker},
		{Name: "m:27950", End: discover.EndLimit, Error: "sent more than 1024 packets (the bound per master, discover.Config.MaxPackets): the rest of its list is ignored"},
	}}, &b)
	want := "scout servers: master m:27950: sent more than 1024 packets (the bound per master, discover.Config.MaxPackets): the rest of its list is ignored\n"
	if b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
}

func TestWarnRefused_OneLineWithTheCountsAndTheFlag(t *testing.T) {
	var b bytes.Buffer
	warnRefused(discover.Summary{Refused: map[string]int{"loopback": 1796, "master": 1, "private": 3}}, &b)
	want := "scout servers: 1800 servers that public masters listed at local addresses or at their own were not probed (loopback 1796, master 1, private 3); --allow-local probes them\n"
	if b.String() != want {
		t.Errorf("warning %q, want %q", b.String(), want)
	}
	b.Reset()
	warnRefused(discover.Summary{}, &b)
	if b.Len() != 0 {
		t.Errorf("a run that refused nothing warns %q", b.String())
	}
}
