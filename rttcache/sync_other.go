//go:build !unix

package rttcache

// syncDir is a no-op where a folder cannot be synced (Windows: the rename
// itself, MoveFileEx with replace, is what the file system journals).
func syncDir(string) {}
