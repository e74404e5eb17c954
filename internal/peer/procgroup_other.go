//go:build !unix

package peer

import (
	"os"
	"syscall"
)

// ownGroup: no process groups to ask for here.
func ownGroup() *syscall.SysProcAttr { return nil }

// stopGroup ends p (no group, no gentle signal here).
func stopGroup(p *os.Process, _ bool) { p.Kill() }
