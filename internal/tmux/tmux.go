// Package tmux runs a program in a real terminal for a test: a detached
// tmux session of a given size, on a tmux server of the test's own, that
// the test types into (SendKeys) and reads (Screen) as a person would see
// it. Tests wait for what they expect with WaitFor, polling the screen
// until a condition holds or a deadline passes; they never sleep.
package tmux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
)

// Poll is how often WaitFor reads the screen.
const Poll = 20 * time.Millisecond

// Session is a program running in a tmux pane.
type Session struct {
	t      testing.TB
	tmux   string
	socket string
	Width  int
	Height int
}

// Start runs argv in a new tmux session of width x height cells, with env
// added to the environment (TERM is tmux's own). The session and its
// tmux server end with the test.
func Start(t testing.TB, width, height int, env []string, argv ...string) *Session {
	t.Helper()
	path := peer.Need(t, "tmux", "apt-get install tmux")
	dir := t.TempDir()
	s := &Session{t: t, tmux: path, socket: filepath.Join(dir, "tmux.sock"), Width: width, Height: height}
	// remain-on-exit keeps the pane, and what the program printed last,
	// after it ends.
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", conf, "new-session", "-d", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height)}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, argv...)
	s.run(args...)
	t.Cleanup(func() { exec.Command(s.tmux, "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *Session) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Screen returns the pane's lines as shown, trailing spaces removed.
func (s *Session) Screen() []string { return s.capture(false) }

// Joined returns the pane's lines with the lines the terminal wrapped
// joined again: it differs from Screen exactly when a line wrapped.
func (s *Session) Joined() []string { return s.capture(true) }

func (s *Session) capture(join bool, more ...string) []string {
	s.t.Helper()
	args := append([]string{"capture-pane", "-p"}, more...)
	if join {
		args = append(args, "-J")
	}
	out := s.run(args...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// SendKeys types keys, in tmux's key names ("Enter", "Escape", "Down",
// "C-c") or as literal text.
func (s *Session) SendKeys(keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys"}, keys...)...)
}

// Type sends text literally, a key at a time.
func (s *Session) Type(text string) {
	s.t.Helper()
	s.run("send-keys", "-l", text)
}

// WaitExit waits until the program has exited (tmux marks the pane dead
// once it has read everything the program wrote), and returns the last
// screenful the program left, without tmux's "Pane is dead" line and the
// blank lines before it: on exit, tmux may scroll the screen to put its
// line at the bottom.
func (s *Session) WaitExit(within time.Duration) []string {
	s.t.Helper()
	s.WaitFor("the program's exit", within, func([]string) bool {
		return strings.TrimSpace(s.run("display-message", "-p", "#{pane_dead}")) == "1"
	})
	h := program(s.History())
	return h[max(len(h)-s.Height, 0):]
}

// Wrapped returns how many lines the terminal wrapped, on the screen and
// in the scrolled-off history: a program that fits the width wraps none.
func (s *Session) Wrapped() int {
	return len(program(s.capture(false, "-S", "-"))) - len(program(s.capture(true, "-S", "-")))
}

// program is what the program wrote of lines: tmux's "Pane is dead" line
// (which -J joins to the blank line above it) and the blank lines at the
// end are cut.
func program(lines []string) []string {
	for len(lines) > 0 {
		l := lines[len(lines)-1]
		if strings.TrimSpace(l) != "" && !strings.Contains(l, "Pane is dead") {
			break
		}
		lines = lines[:len(lines)-1]
	}
	return lines
}

// History returns the pane's scrolled-off lines and the screen.
func (s *Session) History() []string { return s.capture(false, "-S", "-") }

// JoinedHistory is History with the lines the terminal wrapped joined
// again, to find what the program printed whatever the width.
func (s *Session) JoinedHistory() []string { return s.capture(true, "-S", "-") }

// WaitFor polls the screen until ok holds, failing the test with the
// last screen and what was awaited after within.
func (s *Session) WaitFor(what string, within time.Duration, ok func(screen []string) bool) []string {
	s.t.Helper()
	return s.WaitCheck(what, within, func(sc []string) error {
		if ok(sc) {
			return nil
		}
		return errNotYet
	})
}

// errNotYet is WaitFor's complaint.
var errNotYet = errors.New("not shown")

// WaitCheck is WaitFor for a screen that must pass check, failing with
// check's last complaint and the screen after within. A test waits this
// way for what a frame should show, not for one line of it: tmux may show
// the top of a new frame before the program has written its bottom.
func (s *Session) WaitCheck(what string, within time.Duration, check func(screen []string) error) []string {
	s.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	for {
		sc := s.Screen()
		err := check(sc)
		if err == nil {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %v, still waiting for %s: %v; the screen:\n%s", within, what, err, strings.Join(sc, "\n"))
		}
		<-tick.C
	}
}

// Contains is a WaitFor condition: some line holds text.
func Contains(text string) func([]string) bool {
	return func(sc []string) bool {
		for _, l := range sc {
			if strings.Contains(l, text) {
				return true
			}
		}
		return false
	}
}

// String is the screen as one text, for messages.
func String(screen []string) string {
	return fmt.Sprintf("%s\n", strings.Join(screen, "\n"))
}
