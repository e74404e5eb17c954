// Package clitest checks what every subcommand of a cli.Commands owes its
// user: a help that writes its flags --flag and gives its exit statuses,
// and a bad flag answered with the error and one line naming -h, not the
// whole help.
package clitest

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/cli"
)

// singleDash finds a flag listed or named -flag (one dash, two letters
// or more) at the start of a help line.
var singleDash = regexp.MustCompile(`(?m)^\s+-[a-z][a-z]`)

// Check runs every subcommand of cs with -h and with an unknown flag.
// usageExit gives the exit status of a usage error for the subcommands
// whose status is not 2 (scout master's is dpmaster's, 1).
func Check(t *testing.T, cs *cli.Commands, usageExit map[string]int) {
	t.Helper()
	if len(cs.All()) == 0 {
		t.Fatal("no subcommands registered")
	}
	for name, c := range cs.All() {
		var out, errb bytes.Buffer
		if code := c.Run(context.Background(), []string{"-h"}, &out, &errb); code != 0 {
			t.Errorf("%s %s -h: exit %d, want 0 (stderr %q)", cs.Prog, name, code, errb.String())
		}
		help := out.String() + errb.String()
		if !strings.Contains(help, "Exit status") {
			t.Errorf("%s %s -h does not give the exit statuses", cs.Prog, name)
		}
		if m := singleDash.FindString(help); m != "" {
			t.Errorf("%s %s -h writes a flag with one dash: %q", cs.Prog, name, m)
		}

		out.Reset()
		errb.Reset()
		want := 2
		if n, ok := usageExit[name]; ok {
			want = n
		}
		code := c.Run(context.Background(), []string{"--no-such-flag"}, &out, &errb)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != want || len(lines) != 2 || !strings.Contains(lines[0], "no-such-flag") || !strings.Contains(lines[1], "-h") {
			t.Errorf("%s %s --no-such-flag: exit %d (want %d), stderr %q: want the error and one line naming -h", cs.Prog, name, code, want, errb.String())
		}
	}
}
