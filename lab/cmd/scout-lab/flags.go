package main

import (
	"flag"
	"io"

	"github.com/scout-discovery/scout/internal/cli"
)

// newFlags returns a flag set for one subcommand that prints its usage to w.
// synopsis is the line after "usage: scout-lab NAME", and about is a paragraph
// printed before the flag list.
func newFlags(name, synopsis, about string, w io.Writer) *flag.FlagSet {
	return cli.NewFlags("scout-lab", name, synopsis, about, w)
}

// parseFlags parses args into fs. When it returns done, the caller returns
// code at once: 0 after -h, 2 after a usage error (already reported).
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	return cli.ParseFlags(fs, args)
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
