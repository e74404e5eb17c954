package rttcache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The file shell: where the memory lives and how it is read and written.

// FileName is the memory's file in DefaultPath's folder.
const FileName = "rtt-cache"

// DefaultPath returns the memory's file: scout/rtt-cache in the user's
// cache folder (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux and
// the BSDs, ~/Library/Caches on macOS, %LocalAppData% on Windows).
func DefaultPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("rttcache: %w", err)
	}
	return filepath.Join(dir, "scout", FileName), nil
}

// DamagedSuffix is added to the name of a damaged file Load moves aside.
const DamagedSuffix = ".damaged"

// Load reads the memory at path. A missing file is an empty memory. A
// damaged one (ErrDamaged) is moved aside to path + DamagedSuffix, so the
// next Save does not lose it, and Load returns an empty memory with the
// error, for the caller to report; any other error (the file cannot be
// read) returns a nil Cache.
func Load(path string) (*Cache, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("rttcache: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("rttcache: %w", err)
	}
	c, perr := Parse(b)
	if perr == nil {
		return c, nil
	}
	if err := os.Rename(path, path+DamagedSuffix); err != nil {
		return New(), fmt.Errorf("rttcache: %s: %w (and moving it aside: %v)", path, perr, err)
	}
	return New(), fmt.Errorf("rttcache: %s: %w (moved to %s)", path, perr, path+DamagedSuffix)
}

// Save writes c to path atomically: to a temporary file in the same
// folder (made if missing, mode 0700), synced, then renamed over path and
// the folder synced, so a crash leaves the old file or the new one, never
// a part of either. Two runs saving at once: the last rename wins.
func Save(path string, c *Cache) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("rttcache: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("rttcache: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(c.AppendText(nil))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rttcache: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rttcache: %w", err)
	}
	syncDir(dir)
	removeStale(dir, filepath.Base(path), time.Now())
	return nil
}

// StaleTemp is how old a temporary file of Save's must be for a later
// Save to remove it: one a killed run left. A younger one may be another
// run's, being written.
const StaleTemp = 10 * time.Minute

func removeStale(dir, base string, now time.Time) {
	left, _ := filepath.Glob(filepath.Join(dir, "."+base+".*"))
	for _, f := range left {
		if st, err := os.Stat(f); err == nil && now.Sub(st.ModTime()) > StaleTemp {
			os.Remove(f)
		}
	}
}
