//go:build unix

package peer

import (
	"os"
	"syscall"
)

// ownGroup starts a process in a process group of its own, so that
// stopping it stops what it started (a launcher script's children).
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// stopGroup sends the process group led by p SIGTERM, or SIGKILL if kill.
func stopGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, sig)
}
