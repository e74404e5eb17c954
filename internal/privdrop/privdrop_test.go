//go:build unix

package privdrop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Credentials
		ok   bool
	}{
		{"65534", Credentials{65534, 65534}, true},
		{"1000:100", Credentials{1000, 100}, true},
		{"root", Credentials{0, 0}, true},
		{"1000:", Credentials{}, false},
		{":5", Credentials{}, false},
		{"-1", Credentials{}, false},
		{"", Credentials{}, false},
		{"no-such-user-scout", Credentials{}, false},
	} {
		got, err := Lookup(tc.spec)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Lookup(%q) = %v, %v; want %v, ok=%v", tc.spec, got, err, tc.want, tc.ok)
		}
	}
}

func TestOptions_Check(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string // "" for no error
	}{
		{Options{}, ""},
		{Options{User: "65534"}, ""},
		{Options{User: "65534", Jail: "/var/empty"}, ""},
		{Options{Jail: "/var/empty"}, "-j needs -u"},
		{Options{User: "65534", Jail: "jail"}, "absolute path"},
		{Options{User: "0"}, "is root"},
		{Options{User: "root"}, "is root"},
	} {
		err := tc.o.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v.Check() = %v, want %q", tc.o, err, tc.want)
		}
	}
}

// childEnv marks the test binary run as the process that drops.
const childEnv = "SCOUT_PRIVDROP_CHILD"

// TestMain runs the child's part when the test re-executes itself: drop
// with the options in the environment, then report who it is and what it
// sees.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	o := Options{User: os.Getenv("SCOUT_PRIVDROP_USER"), Jail: os.Getenv("SCOUT_PRIVDROP_JAIL")}
	if err := Drop(o); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	_, inJail := os.Stat("/inside-the-jail")
	groups, _ := os.Getgroups()
	fmt.Printf("uid=%d euid=%d gid=%d groups=%v jailed=%v\n", os.Getuid(), os.Geteuid(), os.Getgid(), groups, inJail == nil)
	os.Exit(0)
}

// TestDrop_RealProcess runs Drop in a child process started as root: it
// ends as the user, inside the jail, and cannot become root again.
func TestDrop_RealProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; this test needs root")
		}
		t.Skip("needs root")
	}
	jail := t.TempDir()
	if err := os.WriteFile(filepath.Join(jail, "inside-the-jail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The child is this test binary, already running when it chroots: the
	// jail needs nothing but the marker file.
	run := func(user, jailDir string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "SCOUT_PRIVDROP_USER="+user, "SCOUT_PRIVDROP_JAIL="+jailDir)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run("65534:65534", jail)
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	if want := "uid=65534 euid=65534 gid=65534 groups=[65534] jailed=true"; out != want {
		t.Fatalf("child reported %q, want %q", out, want)
	}
	out, err = run("nobody", "")
	if err != nil || !strings.HasPrefix(out, "uid=65534 ") || !strings.HasSuffix(out, "jailed=false") {
		t.Fatalf("-u nobody without -j: %v: %q", err, out)
	}
	out, err = run("", jail)
	if err == nil || !strings.Contains(out, "-j needs -u") {
		t.Fatalf("-j without -u: %v: %q", err, out)
	}
}
