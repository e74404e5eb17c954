//go:build unix

package rttcache

import "os"

// syncDir makes a rename in dir durable (best effort: a failure leaves
// the rename to the file system's own schedule).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
