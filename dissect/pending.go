package dissect

import "fmt"

// Families whose packages have not landed yet.

func decodeQ3(b []byte) Result {
	return Result{Family: Q3, Err: fmt.Errorf("%w: q3", ErrNoDecoder)}
}

func q3Disowns(err error) bool { return true }

func decodeA2S(b []byte) Result {
	return Result{Family: A2S, Err: fmt.Errorf("%w: a2s", ErrNoDecoder)}
}

func decodeSteamMaster(b []byte) Result {
	return Result{Family: SteamMaster, Err: fmt.Errorf("%w: steammaster", ErrNoDecoder)}
}
