package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
)

// unitBinary is the path the units run scout from.
const unitBinary = "/usr/local/bin/scout"

// hardening is what each unit must set, key by key.
var hardening = map[string]string{
	"DynamicUser":             "yes",
	"NoNewPrivileges":         "yes",
	"ProtectSystem":           "strict",
	"ProtectHome":             "yes",
	"PrivateTmp":              "yes",
	"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
	"SystemCallFilter":        "@system-service",
	"Restart":                 "on-failure",
	"ExecReload":              "/bin/kill -HUP $MAINPID",
}

// TestSystemd_Verify runs systemd-analyze verify on both units, with the
// binary path pointing at a scout just built (verify checks that ExecStart's
// program exists), and fails on any complaint, warnings included.
func TestSystemd_Verify(t *testing.T) {
	sa := peer.Need(t, "systemd-analyze", "apt-get install systemd")
	bin := realBinary(t)
	dir := t.TempDir()
	for _, name := range []string{"scout-master.service", "scout-master@.service"} {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), unitBinary) {
			t.Fatalf("%s does not run %s", name, unitBinary)
		}
		b = []byte(strings.ReplaceAll(string(b), unitBinary, bin))
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The template is verified through an instance: systemd finds
	// scout-master@.service beside it.
	for _, unit := range []string{"scout-master.service", "scout-master@a.service"} {
		out, err := exec.Command(sa, "verify", filepath.Join(dir, unit)).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
		}
	}
}

// realBinary returns the scout binary as a path systemd accepts (absolute,
// no symlink).
func realBinary(t *testing.T) string {
	t.Helper()
	b, err := filepath.EvalSymlinks(masterproc.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSystemd_Hardening checks that both units set the hardening options
// and that their ExecStart passes only options scout master accepts.
func TestSystemd_Hardening(t *testing.T) {
	flags := masterFlags(t)
	for _, name := range []string{"scout-master.service", "scout-master@.service"} {
		keys := unitKeys(t, filepath.Join("systemd", name))
		for k, want := range hardening {
			if !contains(keys[k], want) {
				t.Errorf("%s: %s=%s missing (has %q)", name, k, want, keys[k])
			}
		}
		if !contains(keys["StateDirectory"], "scout") && !contains(keys["StateDirectory"], "scout/%i") {
			t.Errorf("%s: StateDirectory=%q, want scout", name, keys["StateDirectory"])
		}
		exec := strings.Fields(keys["ExecStart"][0])
		if exec[0] != unitBinary || exec[1] != "master" {
			t.Errorf("%s: ExecStart=%v does not run %s master", name, exec, unitBinary)
		}
		checkArgs(t, name, exec[2:], flags)
	}
}

// unitKeys reads a unit file's Key=Value lines (every section together).
func unitKeys(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			keys[k] = append(keys[k], v)
		}
	}
	return keys
}

func contains(vs []string, want string) bool {
	for _, v := range vs {
		if v == want {
			return true
		}
	}
	return false
}
