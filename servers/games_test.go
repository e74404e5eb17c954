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
