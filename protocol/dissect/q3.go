package dissect

import (
	"errors"

	"github.com/scout-discovery/scout/protocol/q3"
)

// decodeQ3 decodes a Quake III family connectionless packet. The message
// is named by its command word in the spelling the engines send
// ("infoResponse", "getserversExtResponse").
func decodeQ3(b []byte) Result {
	r := Result{Family: Q3}
	r.Message, _ = q3.Command(b)
	m, err := q3.ParseQuery(b) // as the master reads it
	r.Err = err
	if m != nil {
		r.Msg = m // with err set, what parsed before the defect
	}
	return r
}

// q3Disowns reports whether q3 says the packet is not one of its own: no
// FF FF FF FF prefix, or a command word it does not know (Valve's A2S and
// master replies share the prefix).
func q3Disowns(err error) bool {
	return errors.Is(err, q3.ErrNotQ3) || errors.Is(err, q3.ErrUnknownCommand)
}
