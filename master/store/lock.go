package store

import (
	"fmt"
	"time"
)

// LockedError is Open's error when another process holds the state file's
// lock (bbolt takes an exclusive flock on the file while it is open) for
// longer than Options.Timeout: most likely another master running on the
// same file.
type LockedError struct {
	Path   string
	Waited time.Duration
	// PID is the process holding the lock, where the system tells it
	// (Linux: /proc/locks); 0 when it does not.
	PID int
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = fmt.Sprintf("process %d", e.PID)
	}
	return fmt.Sprintf("store: %s is locked by %s (an exclusive lock on the file, held while a master has it open); waited %v", e.Path, who, e.Waited)
}
