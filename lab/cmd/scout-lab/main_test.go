package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/cli/clitest"
)

func TestRun_UnknownSubcommandIsUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"no-such-thing"}, &out, &errb); code != 2 {
		t.Fatalf("exit = %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "unknown subcommand") {
		t.Fatalf("stderr = %q, want it to name the problem", errb.String())
	}
}

// Every subcommand's -h lists its flags as --flag and gives its exit
// statuses; a bad flag prints the error and one line naming -h.
func TestRun_EverySubcommandsHelpAndBadFlag(t *testing.T) {
	clitest.Check(t, &commands, nil)
}

// --version is the version subcommand.
func TestRun_VersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 || !strings.Contains(out.String(), "Apache-2.0") {
			t.Errorf("%s %q: exit %d, stdout %q, stderr %q", "scout-lab", args, code, out.String(), errb.String())
		}
	}
}
