package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlags returns a flag set for one subcommand that prints its usage to w.
// synopsis is the line after "usage: scout NAME", and about is a paragraph
// printed before the flag list.
func newFlags(name, synopsis, about string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("scout "+name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: scout %s %s\n\n", name, synopsis)
		if about != "" {
			fmt.Fprintf(w, "%s\n\n", about)
		}
		fmt.Fprintln(w, "Flags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. When it returns done, the caller returns
// code at once: 0 after -h, 2 after a usage error (already reported).
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	default:
		return 2, true
	}
}
