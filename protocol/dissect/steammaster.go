package dissect

import (
	"errors"

	"github.com/scout-discovery/scout/protocol/steammaster"
)

// decodeSteamMaster decodes a Steam master-server query ("query") or
// reply ("reply").
func decodeSteamMaster(b []byte) Result {
	r := Result{Family: SteamMaster}
	switch {
	case len(b) > 0 && b[0] == 0x31:
		r.Message = "query"
	case hasPrefix(b, 0xFF, 0xFF, 0xFF, 0xFF, 0x66, 0x0A):
		r.Message = "reply"
	}
	m, err := steammaster.Parse(b)
	r.Err = err
	if m != nil {
		r.Msg = m // with err set, a reply keeps the servers before the defect
	}
	if errors.Is(err, steammaster.ErrNotSteamMaster) {
		r.Message = ""
	}
	return r
}
