// Package doccheck holds the tests that keep the Markdown docs (README.md,
// BENCHMARKS.md, EVALUATION.md and docs/) true to the tree: links and
// anchors resolve, the paths and packages they name exist, the tests and
// benchmarks a go test command selects exist, every scout and scout-lab
// command and flag they show is one the binaries accept, the README's
// layout table is the repository's folders, and no doc carries a commit
// hash or an issue number (history lives in git).
package doccheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/scout-discovery/scout/internal/peer"
)

// doc is one Markdown file: its path from the module root, its lines,
// which of them are inside fenced code blocks, and which of those are
// output (a block whose info string is text or json), not code.
type doc struct {
	path   string
	lines  []string
	fence  []bool
	output []bool
}

// docs returns the docs the tests hold to: the three at the root and
// every Markdown file under docs/.
func docs(t *testing.T) []doc {
	t.Helper()
	root := peer.ModuleRoot(t)
	paths := []string{"README.md", "BENCHMARKS.md", "EVALUATION.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []doc
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		d := doc{path: p, lines: strings.Split(string(b), "\n")}
		in, output := false, false
		for _, l := range d.lines {
			info, fenceLine := strings.CutPrefix(strings.TrimSpace(l), "```")
			d.fence = append(d.fence, in && !fenceLine)
			d.output = append(d.output, in && !fenceLine && output)
			if fenceLine {
				in = !in
				output = in && (info == "text" || info == "json")
			}
		}
		out = append(out, d)
	}
	return out
}

var spanRE = regexp.MustCompile("`([^`]+)`")

// code returns the doc's code, each piece with its line number: the
// lines of fenced blocks (a line ending in a backslash joined with the
// next) but output blocks, and the inline code spans of the other lines.
func (d doc) code() (pieces []string, lines []int) {
	for i := 0; i < len(d.lines); i++ {
		l := d.lines[i]
		if d.output[i] {
			continue
		}
		if d.fence[i] {
			n := i
			for strings.HasSuffix(l, `\`) && i+1 < len(d.lines) && d.fence[i+1] {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(d.lines[i])
			}
			pieces, lines = append(pieces, l), append(lines, n+1)
			continue
		}
		for _, m := range spanRE.FindAllStringSubmatch(l, -1) {
			pieces, lines = append(pieces, m[1]), append(lines, i+1)
		}
	}
	return pieces, lines
}

// prose returns the doc's lines outside fenced blocks, with their numbers.
func (d doc) prose() (out []string, lines []int) {
	for i, l := range d.lines {
		if !d.fence[i] && !strings.HasPrefix(strings.TrimSpace(l), "```") {
			out, lines = append(out, l), append(lines, i+1)
		}
	}
	return out, lines
}

// slug is GitHub's anchor for a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of the Markdown file at path (duplicates
// numbered as GitHub numbers them).
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	for l := range strings.Lines(string(b)) {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if in || !strings.HasPrefix(l, "#") {
			continue
		}
		s := slug(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)|<img [^>]*src="([^"]+)"`)

// TestDocs_LinksResolve: every relative link (and image) of the docs names
// a file of the tree, and every #anchor a heading of its target.
func TestDocs_LinksResolve(t *testing.T) {
	root := peer.ModuleRoot(t)
	for _, d := range docs(t) {
		lines, nums := d.prose()
		for i, l := range lines {
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1] + m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				full := filepath.Join(root, d.path)
				if file != "" {
					full = filepath.Join(root, filepath.Dir(d.path), file)
					if _, err := os.Stat(full); err != nil {
						t.Errorf("%s:%d: link %q: no such file", d.path, nums[i], target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(full, ".md") && !anchors(t, full)[anchor] {
					t.Errorf("%s:%d: link %q: no heading with that anchor", d.path, nums[i], target)
				}
			}
		}
	}
}

// topLevel returns the repository's tracked top-level entries, folders
// (dot-folders left out) and files apart.
func topLevel(t *testing.T) (dirs, files map[string]bool) {
	t.Helper()
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = peer.ModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout?)", err)
	}
	dirs, files = map[string]bool{}, map[string]bool{}
	for l := range strings.Lines(string(out)) {
		l = strings.TrimSpace(l)
		first, _, isDir := strings.Cut(l, "/")
		switch {
		case strings.HasPrefix(first, "."):
		case isDir:
			dirs[first] = true
		default:
			files[first] = true
		}
	}
	return dirs, files
}

var pathRE = regexp.MustCompile(`(?:^|[\s(=,'"])(?:\./)?((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.*@-]*)`)

// TestDocs_PathsExist: a path of the tree named in code (a block or a
// span) exists. Paths are recognised by their first folder, a top-level
// folder of the repository; output folders and other machines' paths
// (/tmp/..., ../shared/...) are not checked.
func TestDocs_PathsExist(t *testing.T) {
	root := peer.ModuleRoot(t)
	dirs, _ := topLevel(t)
	for _, d := range docs(t) {
		pieces, nums := d.code()
		for i, p := range pieces {
			for _, m := range pathRE.FindAllStringSubmatchIndex(p, -1) {
				path := strings.TrimRight(p[m[2]:m[3]], ".,:;")
				if m[2] > 0 && (p[m[2]-1] == '/' || strings.HasPrefix(p[:m[2]], "..")) {
					continue
				}
				first, _, _ := strings.Cut(path, "/")
				if !dirs[first] || strings.Contains(p[max(0, m[2]-3):m[2]], "://") {
					continue
				}
				path = strings.TrimSuffix(strings.TrimSuffix(path, "..."), "/")
				if dir, ident, ok := strings.Cut(path, "."); ok && ident != "" && unicode.IsUpper(rune(ident[0])) {
					path = dir // a package's identifier: internal/peer.RunQuakestat
				}
				matches, _ := filepath.Glob(filepath.Join(root, path))
				if len(matches) == 0 {
					t.Errorf("%s:%d: %q: no such file or folder", d.path, nums[i], path)
				}
			}
		}
	}
}

// TestDocs_LayoutIsTheTree: the README's layout table names every
// top-level folder of the repository, and only those.
func TestDocs_LayoutIsTheTree(t *testing.T) {
	dirs, _ := topLevel(t)
	var readme doc
	for _, d := range docs(t) {
		if d.path == "README.md" {
			readme = d
		}
	}
	named := map[string]bool{}
	in := false
	for _, l := range readme.lines {
		if strings.HasPrefix(l, "## ") {
			in = strings.HasPrefix(l, "## Layout")
			continue
		}
		if !in || !strings.HasPrefix(l, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " |")
		for _, m := range spanRE.FindAllStringSubmatch(cell, -1) {
			first, _, _ := strings.Cut(strings.TrimPrefix(m[1], "./"), "/")
			named[first] = true
		}
	}
	if len(named) == 0 {
		t.Fatal(`README.md: no "## Layout" table`)
	}
	for d := range dirs {
		if !named[d] {
			t.Errorf("README.md's layout table does not name the folder %s/", d)
		}
	}
	for n := range named {
		if !dirs[n] {
			t.Errorf("README.md's layout table names %s, which is not a folder of the repository", n)
		}
	}
}

// TestDocs_READMEShort: the README stays a page a newcomer reads, the
// details in docs/ and the results files.
func TestDocs_READMEShort(t *testing.T) {
	const maxLines = 180
	for _, d := range docs(t) {
		if d.path == "README.md" && len(d.lines) > maxLines {
			t.Errorf("README.md has %d lines, more than %d: move details to docs/", len(d.lines), maxLines)
		}
	}
}

// TestDocs_IndexListsEveryPage: docs/README.md links every page of docs/.
func TestDocs_IndexListsEveryPage(t *testing.T) {
	root := peer.ModuleRoot(t)
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs(t) {
		rel, ok := strings.CutPrefix(d.path, "docs/")
		if ok && rel != "README.md" && !bytes.Contains(index, []byte("("+rel)) {
			t.Errorf("docs/README.md does not link %s", rel)
		}
	}
}

var (
	hashRE  = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	issueRE = regexp.MustCompile(`(?i)\bissues? #?[0-9]`)
)

// TestDocs_NoHistory: no commit hash and no issue number in the docs: a
// reader has neither the tracker nor a reason to read a commit to use
// the program. A run of hex digits counts as a hash when it holds a
// letter and a digit.
func TestDocs_NoHistory(t *testing.T) {
	for _, d := range docs(t) {
		for i, l := range d.lines {
			for _, h := range hashRE.FindAllString(l, -1) {
				if strings.ContainsAny(h, "abcdef") && strings.ContainsAny(h, "0123456789") {
					t.Errorf("%s:%d: %q looks like a commit hash", d.path, i+1, h)
				}
			}
			if m := issueRE.FindString(l); m != "" {
				t.Errorf("%s:%d: %q: issue numbers mean nothing to a reader", d.path, i+1, m)
			}
		}
	}
}

var goCmdRE = regexp.MustCompile(`\bgo (run|build|test|install|vet|generate)\b([^|;&#]*)`)

// TestDocs_GoCommands: the packages a go command of the docs names exist,
// and each -run or -bench pattern of a go test selects a test, benchmark
// or fuzz target of those packages.
func TestDocs_GoCommands(t *testing.T) {
	root := peer.ModuleRoot(t)
	for _, d := range docs(t) {
		pieces, nums := d.code()
		for i, p := range pieces {
			for _, m := range goCmdRE.FindAllStringSubmatch(p, -1) {
				args := shellFields(m[2])
				var pkgs []string
				var patterns []string
				for j, a := range args {
					switch {
					case strings.HasPrefix(a, "./"):
						dir := strings.TrimSuffix(strings.TrimSuffix(a, "..."), "/")
						if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
							t.Errorf("%s:%d: go %s %s: no such package", d.path, nums[i], m[1], a)
							continue
						}
						if !strings.HasSuffix(a, "...") {
							pkgs = append(pkgs, dir)
						}
					case (a == "-run" || a == "-bench") && j+1 < len(args):
						patterns = append(patterns, args[j+1])
					}
				}
				if m[1] != "test" || len(pkgs) == 0 {
					continue
				}
				var names []string
				for _, pkg := range pkgs {
					names = append(names, testNames(t, filepath.Join(root, pkg))...)
				}
				for _, pat := range patterns {
					if pat == "^$" || pat == "." {
						continue
					}
					top, _, _ := strings.Cut(pat, "/")
					re, err := regexp.Compile(top)
					if err != nil {
						t.Errorf("%s:%d: pattern %q: %v", d.path, nums[i], pat, err)
						continue
					}
					if !slices.ContainsFunc(names, re.MatchString) {
						t.Errorf("%s:%d: go test %q selects nothing in %v", d.path, nums[i], pat, pkgs)
					}
				}
			}
		}
	}
}

// testNames returns the Test, Benchmark, Fuzz and Example functions of the
// package in dir, whatever their build tags.
func testNames(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range af.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				for _, p := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
					if strings.HasPrefix(fn.Name.Name, p) {
						names = append(names, fn.Name.Name)
					}
				}
			}
		}
	}
	return names
}

// shellFields splits a command line as a shell would for plain words and
// single- or double-quoted ones (no expansion).
func shellFields(s string) []string {
	var out []string
	var b strings.Builder
	quote, in := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// cli is what scout and scout-lab accept: per binary, its subcommands and
// each one's flags (long and short, without dashes).
type cli map[string]map[string]map[string]bool

var (
	cliOnce sync.Once
	cliVal  cli
	cliErr  error
)

var (
	subRE      = regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)\s+\S`)
	helpFlagRE = regexp.MustCompile(`(?m)^\s+(?:-([A-Za-z]), )?--?([a-z0-9][a-z0-9-]*)`)
	namedRE    = regexp.MustCompile(`(?:^|[^\w-])--([a-z0-9][a-z0-9-]*)`)
)

// commands builds both binaries and reads their subcommands and flags from
// their help.
func commands(t *testing.T) cli {
	t.Helper()
	cliOnce.Do(func() {
		root := peer.ModuleRoot(t)
		dir, err := os.MkdirTemp("", "doccheck")
		if err != nil {
			cliErr = err
			return
		}
		defer os.RemoveAll(dir)
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/scout", "./lab/cmd/scout-lab")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			cliErr = &buildError{"./cmd/scout ./lab/cmd/scout-lab", string(out)}
			return
		}
		cliVal = cli{}
		for _, bin := range []string{"scout", "scout-lab"} {
			exe := filepath.Join(dir, bin)
			if runtime.GOOS == "windows" {
				exe += ".exe"
			}
			help, _ := exec.Command(exe, "help").CombinedOutput()
			subs := map[string]map[string]bool{}
			for _, m := range subRE.FindAllStringSubmatch(string(help), -1) {
				out, _ := exec.Command(exe, m[1], "-h").CombinedOutput()
				flags := map[string]bool{"h": true, "help": true}
				for _, f := range helpFlagRE.FindAllStringSubmatch(string(out), -1) {
					flags[f[1]], flags[f[2]] = true, true
				}
				for _, f := range namedRE.FindAllStringSubmatch(string(out), -1) {
					flags[f[1]] = true // named in the prose: refused options, aliases
				}
				delete(flags, "")
				subs[m[1]] = flags
			}
			cliVal[bin] = subs
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliVal
}

type buildError struct{ pkg, out string }

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.out }

var (
	invocationRE = regexp.MustCompile(`(?:^|[\s/"'=(])(scout-lab|scout)\s+([a-z][a-z0-9-]*)`)
	flagRE       = regexp.MustCompile(`^--?([A-Za-z0-9][A-Za-z0-9-]*)(?:=.*)?$`)
)

// otherFlags are the double-dash options of the other programs the docs
// show (redis-server, chromium, npm, sha256sum, ...): a --flag outside a
// scout command must be one of scout's or one of these.
var otherFlags = []string{
	"port", "bind", "save", "dir", "appendonly", "appendfsync", "headless", "no-sandbox",
	"allow-loopback", // dpmaster's
	"ignore-missing", "loglevel", "no-audit", "no-fund", "check", "snapshot", "clean",
	"skip", "tags", "timeout", "version", "help",
	"now", "name", // systemctl enable --now, podman run --name
}

// TestDocs_ScoutCommands: every scout and scout-lab command the docs show
// names a subcommand the binary has, with flags that subcommand accepts;
// a --flag shown elsewhere is one some subcommand accepts (or another
// program's, otherFlags).
func TestDocs_ScoutCommands(t *testing.T) {
	c := commands(t)
	union := map[string]bool{}
	for _, subs := range c {
		for _, flags := range subs {
			for f := range flags {
				union[f] = true
			}
		}
	}
	for _, f := range otherFlags {
		union[f] = true
	}
	for _, d := range docs(t) {
		pieces, nums := d.code()
		for i, p := range pieces {
			covered := make([]bool, len(p))
			for _, m := range invocationRE.FindAllStringSubmatchIndex(p, -1) {
				bin, sub := p[m[2]:m[3]], p[m[4]:m[5]]
				flags, ok := c[bin][sub]
				if !ok {
					if bin == "scout" && !strings.ContainsAny(p[m[2]:], "-") && len(strings.Fields(p[m[2]:])) == 2 {
						continue // prose in a span, as "scout servers"
					}
					t.Errorf("%s:%d: %s %s: no such subcommand", d.path, nums[i], bin, sub)
					continue
				}
				end := commandEnd(p, m[5])
				for j := m[0]; j < end; j++ {
					covered[j] = true
				}
				for _, a := range shellFields(p[m[5]:end]) {
					if a == "--" && bin == "scout-lab" && sub == "fleet" {
						flags = c["scout"]["master"] // the masters' options
						continue
					}
					if f := flagRE.FindStringSubmatch(a); f != nil && !flags[f[1]] {
						t.Errorf("%s:%d: %s %s: no flag %s", d.path, nums[i], bin, sub, a)
					}
				}
			}
			var rest strings.Builder
			for j := range p {
				if !covered[j] {
					rest.WriteByte(p[j])
				} else {
					rest.WriteByte(' ')
				}
			}
			for _, a := range strings.Fields(rest.String()) {
				a = strings.Trim(a, `"'(),;`)
				if f := flagRE.FindStringSubmatch(a); f != nil && strings.HasPrefix(a, "--") && !union[f[1]] {
					t.Errorf("%s:%d: %s is no flag of scout's or scout-lab's", d.path, nums[i], a)
				}
			}
		}
	}
}

// commandEnd returns where the command starting before i ends in p: at a
// shell separator, a comment, or the quote that closes the one the command
// began in.
func commandEnd(p string, i int) int {
	var quote byte
	for j := 0; j < i; j++ {
		switch c := p[j]; {
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case c == quote:
			quote = 0
		}
	}
	for j := i; j < len(p); j++ {
		switch c := p[j]; {
		case quote != 0 && c == quote:
			return j
		case quote == 0 && strings.IndexByte("|;&#>", c) >= 0:
			return j
		}
	}
	return len(p)
}
