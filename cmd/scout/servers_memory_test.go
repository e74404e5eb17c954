package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// memoryRun runs scout servers --json against m with the memory in file,
// and returns the summary's "order" object and stderr.
func memoryRun(t *testing.T, m string, extra ...string) (map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"servers", "--json", "--timeout", "200ms", "--retries", "1", "--master-timeout", "200ms", "--quiet", "200ms", "--master", m}, extra...)
	if code := run(t.Context(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	lines := jsonLines(t, out.Bytes())
	sum := lines[len(lines)-1]
	ord, _ := sum["order"].(map[string]any)
	return ord, errb.String()
}

// TestServers_RemembersBetweenRuns: the default order records its RTTs
// and the groups of its list in the memory file; the next run uses them (the servers it remembers
// playable are probed first); --memory=false neither reads nor writes.
func TestServers_RemembersBetweenRuns(t *testing.T) {
	s1, s2 := q3Server(t), q3Server(t)
	m := q3Master(t, s1, s2).String()
	file := filepath.Join(t.TempDir(), "memory")
	ord, _ := memoryRun(t, m, "--memory-file", file)
	mem, _ := ord["memory"].(map[string]any)
	if ord["order"] != "auto" || mem == nil || mem["groups"] != float64(0) || mem["saved"] != true {
		t.Fatalf("first run: order %v", ord)
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "group 127.0.0.0/24 ") || !strings.Contains(string(b), "listed 127.0.0.0/24 ") {
		t.Fatalf("memory file: %v\n%s", err, b)
	}
	// A loopback master's RTT is a fraction of a millisecond; one run on a
	// loaded machine can see it tens of milliseconds off, and the memory
	// then rightly takes the client for moved and starts afresh from that
	// run. Such a run is repeated (a few at most).
	for range 4 {
		ord, _ = memoryRun(t, m, "--memory-file", file)
		if mem, _ = ord["memory"].(map[string]any); mem["moved"] != true {
			break
		}
		t.Logf("a run took the client for moved (a master RTT off by a loaded machine): %v", mem)
	}
	groups, _ := ord["groups"].(map[string]any)
	if mem["groups"] != float64(1) || mem["used"] != true || groups == nil || groups["first"] != float64(2) {
		t.Errorf("second run: memory %v, groups %v; want the remembered group's 2 servers probed first", mem, groups)
	}
	other := filepath.Join(t.TempDir(), "memory")
	ord, _ = memoryRun(t, m, "--memory=false", "--memory-file", other)
	if ord["memory"] != nil {
		t.Errorf("--memory=false: memory %v", ord["memory"])
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("--memory=false wrote a memory file")
	}
}

// TestServers_DamagedMemoryIsSetAside: a damaged memory file is moved
// aside and reported; the run goes on with an empty memory and writes a
// new file.
func TestServers_DamagedMemoryIsSetAside(t *testing.T) {
	s1 := q3Server(t)
	m := q3Master(t, s1).String()
	file := filepath.Join(t.TempDir(), "memory")
	if err := os.WriteFile(file, []byte("scout-rtt-cache 1\ngroup 127.0.0.0/24 1 5.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ord, stderr := memoryRun(t, m, "--memory-file", file)
	if !strings.Contains(stderr, "damaged") || !strings.Contains(stderr, file+".damaged") {
		t.Errorf("stderr %q, want the damaged file reported", stderr)
	}
	if mem, _ := ord["memory"].(map[string]any); mem["groups"] != float64(0) || mem["saved"] != true {
		t.Errorf("memory %v", mem)
	}
	if _, err := os.Stat(file + ".damaged"); err != nil {
		t.Errorf("damaged file not kept aside: %v", err)
	}
}
