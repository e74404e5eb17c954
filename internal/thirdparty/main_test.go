package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun_EveryModuleHasItsLicence writes the file for the product binary
// and checks that each module go list names for a release platform is in it
// with a licence text.
func TestRun_EveryModuleHasItsLicence(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list for four platforms")
	}
	out := filepath.Join(t.TempDir(), "THIRD_PARTY_LICENSES")
	// The test runs in internal/thirdparty; the product binary is two up.
	pkg := "../../cmd/scout"
	if err := run(out, []string{pkg}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	mods, err := modules([]string{pkg})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatal("go list found no module")
	}
	for _, m := range append(mods, module{Path: "Go standard library"}) {
		i := strings.Index(text, "\n"+m.Path+" "+m.Version+"\n")
		if i < 0 {
			t.Errorf("%s %s missing", m.Path, m.Version)
			continue
		}
		if !strings.Contains(text[i:], "--- ") {
			t.Errorf("%s has no licence text", m.Path)
		}
	}
	for _, want := range []string{"Redistribution and use in source and binary forms", "Permission is hereby granted", "Apache License"} {
		if !strings.Contains(text, want) {
			t.Errorf("no licence says %q", want)
		}
	}
}

func TestLicenceFiles_NoneIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := write(new(strings.Builder), []module{{Path: "example.com/x", Version: "v1.0.0", Dir: dir}})
	if err == nil || !strings.Contains(err.Error(), "no licence file") {
		t.Fatalf("write = %v, want a missing-licence error", err)
	}
}
