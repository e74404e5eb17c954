//go:build !linux

package store

// lockHolder returns 0: only Linux tells who holds a lock here.
func lockHolder(string) int { return 0 }
