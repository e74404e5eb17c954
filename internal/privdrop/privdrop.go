// Package privdrop gives up root after a server has bound its sockets and
// opened its files, as dpmaster's -j and -u do: it changes the root
// directory to a jail, then becomes an unprivileged user, and checks that
// root cannot be taken back.
//
// Unix only; elsewhere Drop refuses. The user is looked up before the
// chroot, so the jail needs no /etc/passwd.
package privdrop

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
)

// Options say what to give up. The zero value gives up nothing.
type Options struct {
	// User is the account to become: a name, "UID" or "UID:GID". Empty:
	// stay who we are.
	User string
	// Jail is the directory to chroot into (an absolute path). Empty: no
	// chroot. It needs User: a chroot does not confine root.
	Jail string
}

// Credentials are a looked-up user's ids.
type Credentials struct {
	UID, GID int
}

// ErrUnsupported is Drop's error on platforms without setuid and chroot.
var ErrUnsupported = errors.New("dropping privileges (-u, -j) is not supported on this platform")

// Lookup resolves "name", "UID" or "UID:GID" to ids. A name's group is its
// primary group; a bare UID's group is the same number.
func Lookup(spec string) (Credentials, error) {
	if spec == "" {
		return Credentials{}, errors.New("empty user")
	}
	if u, g, ok := strings.Cut(spec, ":"); ok {
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
			return Credentials{}, fmt.Errorf("user %q: want NAME, UID or UID:GID", spec)
		}
		return Credentials{uid, gid}, nil
	}
	if uid, err := strconv.Atoi(spec); err == nil {
		if uid < 0 {
			return Credentials{}, fmt.Errorf("user %q: negative id", spec)
		}
		return Credentials{uid, uid}, nil
	}
	u, err := user.Lookup(spec)
	if err != nil {
		return Credentials{}, fmt.Errorf("user %q: %w", spec, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return Credentials{}, fmt.Errorf("user %q: ids %q:%q are not numbers", spec, u.Uid, u.Gid)
	}
	return Credentials{uid, gid}, nil
}

// Check refuses options Drop would refuse, without doing anything, so a
// server can say so before it binds.
func (o Options) Check() error {
	if o.Jail != "" && o.User == "" {
		return errors.New("-j needs -u: a chroot does not confine root")
	}
	if o.Jail != "" && !strings.HasPrefix(o.Jail, "/") {
		return fmt.Errorf("-j %s: want an absolute path", o.Jail)
	}
	if o.User == "" {
		return nil
	}
	c, err := Lookup(o.User)
	if err != nil {
		return err
	}
	if c.UID == 0 {
		return fmt.Errorf("-u %s is root: nothing would be given up", o.User)
	}
	return nil
}
