package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/scout-discovery/scout/internal/buildinfo"
)

// Main runs the subcommand the process's arguments name, cancelling its
// context on an interrupt or SIGTERM, and exits with its status.
func (cs *Commands) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cs.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Version returns the version subcommand of prog: the version, the
// commit and date it was built from, the Go toolchain and the licence.
func Version(prog string) Command {
	return Command{
		Name:    "version",
		Summary: "print " + prog + "'s version, build and licence",
		Run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			fs := NewFlags(prog, "version", "", "Prints the version, the commit and date it was built from, the Go toolchain, and the licence.", stderr)
			if code, done := ParseFlags(fs, args); done {
				return code
			}
			fmt.Fprintln(stdout, buildinfo.Read())
			return 0
		},
	}
}
