package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/masterproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	masterproc.Cleanup()
	os.Exit(code)
}

// optionRE matches an option line of `scout master -h`: "  -p, --port ..."
// or "      --max-pending ...".
var optionRE = regexp.MustCompile(`^\s+(?:-([a-zA-Z]), )?--([a-z0-9-]+)`)

// masterFlags returns the options `scout master` accepts, as the program
// itself lists them in its help ("--port", "-p", ...).
func masterFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(masterproc.Binary(t), "master", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("scout master -h: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if m := optionRE.FindStringSubmatch(line); m != nil {
			if m[1] != "" {
				flags["-"+m[1]] = true
			}
			flags["--"+m[2]] = true
		}
	}
	if len(flags) < 20 || !flags["--store"] || !flags["--http"] {
		t.Fatalf("read only %d options from scout master -h:\n%s", len(flags), out)
	}
	return flags
}

// checkArgs fails the test for each option in args that scout master does
// not accept ("--name=value" is checked by its name).
func checkArgs(t *testing.T, where string, args []string, flags map[string]bool) {
	t.Helper()
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if !flags[name] {
			t.Errorf("%s passes %s, which scout master does not accept", where, name)
		}
	}
}
