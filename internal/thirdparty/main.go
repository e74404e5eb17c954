// Command thirdparty writes the licence texts of every module linked into
// the given packages, for the release archives: BSD, MIT and ISC licences
// ask that a redistributed binary carry them.
//
//	go run ./internal/thirdparty -o THIRD_PARTY_LICENSES ./cmd/scout
//
// It asks `go list -deps` for each GOOS the release builds (the module set
// differs a little by platform), adds the Go standard library, and copies
// each module's LICENSE/COPYING/NOTICE files from the module cache. A module
// without a licence file is an error: its terms are unknown.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// releaseOSes are the GOOS values the release builds.
var releaseOSes = []string{"linux", "windows", "darwin", "freebsd"}

// module is one module linked into the binary.
type module struct {
	Path, Version, Dir string
}

func main() {
	out := flag.String("o", "THIRD_PARTY_LICENSES", "output file")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./cmd/scout"}
	}
	if err := run(*out, pkgs); err != nil {
		fmt.Fprintln(os.Stderr, "thirdparty:", err)
		os.Exit(1)
	}
}

func run(out string, pkgs []string) error {
	mods, err := modules(pkgs)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf, mods); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// modules lists the non-main modules the packages import on any release
// platform, sorted by path.
func modules(pkgs []string) ([]module, error) {
	seen := map[string]module{}
	for _, goos := range releaseOSes {
		args := append([]string{"list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}"}, pkgs...)
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list (GOOS=%s): %w", goos, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) != 3 {
				continue
			}
			seen[f[0]] = module{Path: f[0], Version: f[1], Dir: f[2]}
		}
	}
	mods := make([]module, 0, len(seen))
	for _, m := range seen {
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// licenceFiles returns the licence files at the root of dir.
func licenceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		name := strings.ToUpper(e.Name())
		if e.IsDir() {
			continue
		}
		for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "NOTICE"} {
			if strings.HasPrefix(name, p) {
				files = append(files, filepath.Join(dir, e.Name()))
				break
			}
		}
	}
	return files, nil
}

// write prints the standard library's licence, then each module's.
func write(w io.Writer, mods []module) error {
	fmt.Fprintf(w, "Licences of the third-party code linked into scout\n")
	fmt.Fprintf(w, "(scout itself: Apache-2.0, see LICENSE and NOTICE)\n\n")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	std := module{Path: "Go standard library", Version: "", Dir: strings.TrimSpace(string(goroot))}
	for _, m := range append([]module{std}, mods...) {
		files, err := licenceFiles(m.Dir)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		if len(files) == 0 {
			return errors.New(m.Path + " " + m.Version + ": no licence file in " + m.Dir)
		}
		fmt.Fprintf(w, "%s\n%s %s\n%s\n\n", strings.Repeat("=", 72), m.Path, m.Version, strings.Repeat("=", 72))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "--- %s\n\n%s\n", filepath.Base(f), bytes.TrimRight(b, "\n"))
		}
		fmt.Fprintln(w)
	}
	return nil
}
