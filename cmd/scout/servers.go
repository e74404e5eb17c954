package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/servers"
)

func init() {
	register(cli.Command{Name: "servers", Summary: "list a game's servers from its masters (or the LAN) and probe each", Run: runServers})
}

func runServers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseServersFlags(args, stderr)
	if !ok {
		return code
	}
	res, err := servers.Run(ctx, cfg, stdout, stderr)
	// A run that --max-time or Ctrl-C ended says so in its summary.
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "scout servers: %v\n", err)
	}
	if res.Answered == 0 {
		return 1
	}
	return 0
}

// parseServersFlags reads scout servers' flags; when it returns !ok, the
// caller returns code at once.
func parseServersFlags(args []string, stderr io.Writer) (servers.Config, int, bool) {
	fs := newFlags("servers", "[flags]", servers.Help(), stderr)
	f := servers.AddFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return servers.Config{}, code, false
	}
	if fs.NArg() > 0 {
		return servers.Config{}, cli.UsageError(fs, "unexpected argument %q (masters go with --master)", fs.Arg(0)), false
	}
	cfg, err := f.Config()
	if err != nil {
		return cfg, cli.UsageError(fs, "%v", err), false
	}
	return cfg, 0, true
}
