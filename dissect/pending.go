package dissect

import "fmt"

// Families whose packages have not landed yet.


func decodeA2S(b []byte) Result {
	return Result{Family: A2S, Err: fmt.Errorf("%w: a2s", ErrNoDecoder)}
}

func decodeSteamMaster(b []byte) Result {
	return Result{Family: SteamMaster, Err: fmt.Errorf("%w: steammaster", ErrNoDecoder)}
}
