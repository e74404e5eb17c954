//go:build unix

package privdrop

import (
	"fmt"
	"os"
	"syscall"
)

// Drop chroots into o.Jail (then changes to its /) and becomes o.User:
// supplementary groups cleared, group, then user. It must be called as
// root, after the sockets are bound and the files opened; it does nothing
// for the zero Options. Go applies setuid and setgid to every thread of
// the process.
func Drop(o Options) error {
	if o == (Options{}) {
		return nil
	}
	if err := o.Check(); err != nil {
		return err
	}
	c, err := Lookup(o.User)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("-u/-j: must be started as root to give root up (running as uid %d)", os.Geteuid())
	}
	if o.Jail != "" {
		if err := syscall.Chroot(o.Jail); err != nil {
			return fmt.Errorf("-j %s: chroot: %w", o.Jail, err)
		}
		if err := os.Chdir("/"); err != nil {
			return fmt.Errorf("-j %s: chdir /: %w", o.Jail, err)
		}
	}
	if err := syscall.Setgroups([]int{c.GID}); err != nil {
		return fmt.Errorf("-u %s: setgroups: %w", o.User, err)
	}
	if err := syscall.Setgid(c.GID); err != nil {
		return fmt.Errorf("-u %s: setgid %d: %w", o.User, c.GID, err)
	}
	if err := syscall.Setuid(c.UID); err != nil {
		return fmt.Errorf("-u %s: setuid %d: %w", o.User, c.UID, err)
	}
	// Paranoia, as privilege-separated daemons do: root must be gone.
	if syscall.Setuid(0) == nil {
		return fmt.Errorf("-u %s: still able to become root after setuid", o.User)
	}
	return nil
}
