package dissect

import "fmt"

// Families whose packages have not landed yet.

func decodeSteamMaster(b []byte) Result {
	return Result{Family: SteamMaster, Err: fmt.Errorf("%w: steammaster", ErrNoDecoder)}
}
