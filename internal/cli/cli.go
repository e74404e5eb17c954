// Package cli is what scout's two commands share: subcommands registered by
// name and dispatched from the arguments, and flag sets that print their
// usage. cmd/scout (the product) and lab/cmd/scout-lab (the research lab)
// each keep one Commands.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string // one line for the program's help
	// Run parses args (everything after the subcommand name) and runs the
	// subcommand. It returns the process exit status: 0 success, 1
	// failure, 2 bad usage.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Commands is a program's subcommands. It is filled by init functions
// before main runs and never modified after.
type Commands struct {
	// Prog is the program's name, as the help writes it.
	Prog   string
	byName map[string]Command
}

// Register adds c; it panics on a name registered twice.
func (cs *Commands) Register(c Command) {
	if _, dup := cs.byName[c.Name]; dup {
		panic(cs.Prog + ": subcommand registered twice: " + c.Name)
	}
	if cs.byName == nil {
		cs.byName = map[string]Command{}
	}
	cs.byName[c.Name] = c
}

// All returns every subcommand, by name.
func (cs *Commands) All() map[string]Command { return cs.byName }

// Run dispatches args to their subcommand and returns its exit status:
// the help with no subcommand or "help", 2 for an unknown one.
func (cs *Commands) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		cs.usage(stderr)
		return 2
	}
	switch args[0] {
	case "--version", "-version", "-V":
		if c, ok := cs.byName["version"]; ok {
			return c.Run(ctx, args[1:], stdout, stderr)
		}
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := cs.byName[args[1]]; ok {
				return c.Run(ctx, []string{"-h"}, stdout, stderr)
			}
		}
		cs.usage(stdout)
		return 0
	}
	c, ok := cs.byName[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown subcommand %q\nRun '%s help' for the subcommands.\n", cs.Prog, args[0], cs.Prog)
		return 2
	}
	return c.Run(ctx, args[1:], stdout, stderr)
}

func (cs *Commands) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <subcommand> [flags] [args]\n", cs.Prog)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Subcommands:")
	names := make([]string, 0, len(cs.byName))
	for n := range cs.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cs.byName[n].Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Run '%s <subcommand> -h' for the flags of one subcommand.\n", cs.Prog)
}

// ExitHelp is the exit statuses a subcommand's help gives unless its
// about text states its own (a paragraph starting "Exit status:").
const ExitHelp = "Exit status: 0 success, 1 failure, 2 usage error (a bad flag or argument)."

// NewFlags returns a flag set for subcommand name of prog that prints its
// usage to w. synopsis is the line after "usage: PROG NAME", and about is
// a paragraph printed before the flag list. Flags are written --flag in
// the help (the flag package accepts -flag and --flag alike).
func NewFlags(prog, name, synopsis, about string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: %s %s %s\n\n", prog, name, synopsis)
		if about != "" {
			fmt.Fprintf(w, "%s\n\n", about)
		}
		fmt.Fprintln(w, "Flags:")
		PrintDefaults(w, fs)
		if !strings.Contains(about, "Exit status:") {
			fmt.Fprintf(w, "\n%s\n", ExitHelp)
		}
	}
	return fs
}

// PrintDefaults writes fs's flags as the flag package does, but spelled
// --flag, as scout's help and docs write them. A flag whose usage is ""
// is a hidden alias and not listed.
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		switch f.DefValue {
		case "", "0", "false", "0s", "[]":
		default:
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
}

// ParseFlags parses args into fs. When it returns done, the caller
// returns code at once: 0 after -h (the help printed), 2 after a usage
// error (the error printed, then one line naming -h, not the whole help).
func ParseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	full, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard) // the error is reported below, with the command's name
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = full
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		full()
		return 0, true
	default:
		return UsageError(fs, "%s", dashes.ReplaceAllString(err.Error(), "$1--$2")), true
	}
}

// UsageError reports a usage error of fs's subcommand (an argument the
// flags cannot check) as the flag package reports a bad flag: the error
// on one line, then one naming -h. It returns 2, the exit status.
func UsageError(fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(fs.Output(), "%s: %s\n%s\n", fs.Name(), fmt.Sprintf(format, a...), hint(fs))
	return 2
}

// dashes finds the flag names in the flag package's errors ("flag
// provided but not defined: -x", "invalid value "1s" for flag -n: ..."),
// which it writes -flag, to write them --flag as the help does.
var dashes = regexp.MustCompile(`(: |flag )-([A-Za-z0-9])`)

func hint(fs *flag.FlagSet) string {
	return fmt.Sprintf("Run '%s -h' for its flags.", fs.Name())
}
