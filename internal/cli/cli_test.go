package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// The help writes every flag --flag with its default (a string's
// quoted), hides a flag without usage (a former name kept as an alias),
// and ends with the exit statuses.
func TestNewFlags_HelpWritesDoubleDashes(t *testing.T) {
	var w bytes.Buffer
	fs := NewFlags("prog", "cmd", "[flags]", "About it.", &w)
	fs.String("name", "x", "the name")
	fs.Int("count", 0, "how many")
	fs.Bool("list-loopback", false, "list loopback servers")
	fs.Bool("allow-loopback", false, "")
	if code, done := ParseFlags(fs, []string{"-h"}); code != 0 || !done {
		t.Fatalf("-h: %d, %v", code, done)
	}
	want := "usage: prog cmd [flags]\n\nAbout it.\n\nFlags:\n" +
		"  --count int\n    \thow many\n" +
		"  --list-loopback\n    \tlist loopback servers\n" +
		"  --name string\n    \tthe name (default \"x\")\n" +
		"\n" + ExitHelp + "\n"
	if w.String() != want {
		t.Errorf("help:\n%s\nwant:\n%s", w.String(), want)
	}
	// Both spellings parse, the alias too.
	if code, done := ParseFlags(fs, []string{"-count", "2", "--name=y", "--allow-loopback"}); done || code != 0 {
		t.Errorf("parse: %d, %v", code, done)
	}
}

// A bad flag or argument is the error, with the flag written --flag,
// and one line naming -h: not the help.
func TestParseFlags_BadFlagIsOneLineAndAHint(t *testing.T) {
	var w bytes.Buffer
	fs := NewFlags("prog", "cmd", "", "", &w)
	fs.Duration("timeout", 0, "how long")
	for _, c := range []struct{ args []string }{{[]string{"--bogus"}}, {[]string{"--timeout", "x"}}, {[]string{"-timeout"}}} {
		w.Reset()
		if code, done := ParseFlags(fs, c.args); code != 2 || !done {
			t.Errorf("%q: %d, %v", c.args, code, done)
		}
		lines := strings.Split(strings.TrimSpace(w.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "prog cmd: ") || !strings.Contains(lines[0], " --") ||
			strings.Contains(lines[0], " -b") || lines[1] != "Run 'prog cmd -h' for its flags." {
			t.Errorf("%q: %q", c.args, w.String())
		}
	}
	w.Reset()
	if code := UsageError(fs, "no %s given", "address"); code != 2 || w.String() != "prog cmd: no address given\nRun 'prog cmd -h' for its flags.\n" {
		t.Errorf("UsageError: %d %q", code, w.String())
	}
}

// --version runs the version subcommand; an unknown subcommand is one
// line and a hint.
func TestCommands_VersionAndUnknown(t *testing.T) {
	var cs Commands
	cs.Prog = "prog"
	cs.Register(Command{Name: "version", Run: func(_ context.Context, _ []string, stdout, _ io.Writer) int {
		io.WriteString(stdout, "v1\n")
		return 0
	}})
	var out, errb bytes.Buffer
	if code := cs.Run(context.Background(), []string{"--version"}, &out, &errb); code != 0 || out.String() != "v1\n" {
		t.Errorf("--version: %d %q", code, out.String())
	}
	out.Reset()
	if code := cs.Run(context.Background(), []string{"nope"}, &out, &errb); code != 2 || errb.String() != "prog: unknown subcommand \"nope\"\nRun 'prog help' for the subcommands.\n" {
		t.Errorf("unknown: %d %q", code, errb.String())
	}
}
