package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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

func TestRun_EverySubcommandHasHelp(t *testing.T) {
	if len(commands.All()) == 0 {
		t.Fatal("no subcommands registered")
	}
	for name, c := range commands.All() {
		var out, errb bytes.Buffer
		code := c.Run(context.Background(), []string{"-h"}, &out, &errb)
		if code != 0 {
			t.Errorf("scout-lab %s -h: exit %d, want 0 (stderr %q)", name, code, errb.String())
		}
		if out.Len()+errb.Len() == 0 {
			t.Errorf("scout-lab %s -h printed nothing", name)
		}
	}
}
