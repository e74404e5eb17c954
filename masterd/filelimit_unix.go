//go:build unix

package masterd

import "syscall"

// fileLimit returns the process's file limit (RLIMIT_NOFILE's soft
// limit, which the Go runtime raises to the hard one at start), 0 if
// unknown.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return uint64(r.Cur)
}
