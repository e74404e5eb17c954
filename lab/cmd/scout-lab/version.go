package main

import (
	"context"
	"fmt"
	"io"

	"github.com/scout-discovery/scout/internal/buildinfo"
	"github.com/scout-discovery/scout/internal/cli"
)

func init() {
	register(cli.Command{Name: "version", Summary: "print scout-lab's version, build and licence", Run: runVersion})
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "", "Prints the version, the commit and date it was built from, the Go toolchain, and the licence.", stderr)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	fmt.Fprintln(stdout, buildinfo.Read())
	return 0
}
