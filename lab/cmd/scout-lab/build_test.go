package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
)

// waitBound bounds every wait for a child's log or a datagram.
const waitBound = 15 * time.Second

// The binaries the tests run, built once per test binary (a build takes
// tens of seconds on a busy machine) in binDir, which TestMain removes:
// scout-lab itself and the product's scout, whose masters scout-lab fleet
// starts.
var (
	binDir   string
	binOnce  sync.Once
	labBin   string
	scoutBin string
	binErr   error
)

func TestMain(m *testing.M) {
	// scout servers remembers its RTTs in the user's cache folder: the
	// tests' runs (and the binaries they start) get one of their own.
	cache, err := os.MkdirTemp("", "scout-lab-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinaries builds scout-lab and scout, once, and returns their
// paths.
func buildBinaries(t testing.TB) (lab, scout string) {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "scout-lab-test-bin-"); binErr != nil {
			return
		}
		labBin, scoutBin = filepath.Join(binDir, "scout-lab"), filepath.Join(binDir, "scout")
		root := peer.ModuleRoot(t)
		for bin, pkg := range map[string]string{labBin: "./lab/cmd/scout-lab", scoutBin: "./cmd/scout"} {
			out, err := exec.Command("go", "build", "-C", root, "-o", bin, pkg).CombinedOutput()
			if err != nil {
				binErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return labBin, scoutBin
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
