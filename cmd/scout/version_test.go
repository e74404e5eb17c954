package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion_ReleaseBuild builds scout as the release does, with the
// version, commit and date set by the linker, and checks that `scout
// version` prints them with the licence.
func TestVersion_ReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds scout")
	}
	bin := filepath.Join(t.TempDir(), "scout")
	const pkg = "github.com/scout-discovery/scout/internal/buildinfo"
	ldflags := "-X " + pkg + ".version=v9.8.7 -X " + pkg + ".commit=0123456789abcdef -X " + pkg + ".date=2026-11-28T09:00:00Z"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(out))
	if !strings.HasPrefix(got, "scout v9.8.7 (commit 0123456789abcdef, built 2026-11-28T09:00:00Z, go1.") ||
		!strings.HasSuffix(got, ", licensed under Apache-2.0)") {
		t.Fatalf("scout version printed %q", got)
	}
}

func TestVersion_NamesLicence(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Apache-2.0") {
		t.Fatalf("scout version printed %q, without the licence", out.String())
	}
}
