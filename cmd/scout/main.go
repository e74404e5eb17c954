// Command scout is the game-server discovery tool for the Quake III family,
// Quake 4 / Doom 3, Unreal Tournament 3 (GameSpy 4) and Valve Source games.
//
// Each subcommand lives in its own file in this directory and registers
// itself with [register]; this file only dispatches. The work is done by the
// importable packages at the root of the module.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand of scout.
type command struct {
	name    string
	summary string // one line for `scout help`
	// run parses args (everything after the subcommand name) and runs the
	// subcommand. It returns the process exit status: 0 success, 1 failure,
	// 2 bad usage.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is filled by init functions in this package before main runs and
// never modified after.
var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("scout: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run(ctx, []string{"-h"}, stdout, stderr)
			}
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "scout: unknown subcommand %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: scout <subcommand> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Subcommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'scout <subcommand> -h' for the flags of one subcommand.")
}
