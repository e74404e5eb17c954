package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/scout-discovery/scout/internal/cli"
)

func init() {
	register(cli.Command{Name: "version", Summary: "print scout's version and build information", Run: runVersion})
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "", "Prints the module version and the Go toolchain that built this binary.", stderr)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	v, goVersion := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(stdout, "scout %s (%s)\n", v, goVersion)
	return 0
}
