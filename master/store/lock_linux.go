package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHolder returns the process holding a lock on path, from
// /proc/locks (its lines name each lock's process and the locked file's
// device and inode), or 0.
func lockHolder(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	ino := strconv.FormatUint(st.Ino, 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 17353 08:01:1234567 0 EOF"; a
		// blocked request's line has "->" after the number.
		fs := strings.Fields(sc.Text())
		if len(fs) >= 6 && fs[1] == "->" {
			continue
		}
		if len(fs) < 6 {
			continue
		}
		dev := strings.Split(fs[5], ":")
		if len(dev) != 3 || dev[2] != ino {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil {
			return pid
		}
	}
	return 0
}
