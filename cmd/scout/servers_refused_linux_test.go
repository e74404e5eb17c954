package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/internal/tmux"
)

// netnsScript sets up a network namespace's loopback with the refusing
// master's and its server's public addresses, starts the test binary as
// that master (runRefusingMaster), waits for it to listen, and runs
// scout's arguments ("$@") with it alive.
const netnsScript = `set -e
ip link set lo up
ip addr add 11.0.0.1/32 dev lo
ip addr add 11.0.0.2/32 dev lo
"$TESTBIN" &
helper=$!
trap 'kill $helper 2>/dev/null' EXIT
while [ ! -e "$READY" ]; do kill -0 $helper; sleep 0.05; done
set +e
"$@"
`

// needNetns returns the programs that make a network namespace of the
// test's own (unshare as a user namespace's root, so no privilege is
// needed; ip), skipping without them (failing in CI). A kernel or sandbox
// that refuses the namespace skips the test, in CI too: it is the
// machine's limit, not a missing program, and the rule it checks is also
// held by netscope's and discover's tests.
func needNetns(t *testing.T) (unshare string) {
	t.Helper()
	unshare = peer.Need(t, "unshare", "apt-get install util-linux")
	peer.Need(t, "ip", "apt-get install iproute2")
	if out, err := exec.Command(unshare, "-rn", "true").CombinedOutput(); err != nil {
		msg := "unshare -rn (a user and network namespace) is refused here: " + strings.TrimSpace(string(out))
		t.Skip(msg)
	}
	return unshare
}

// TestServers_BrowserSaysWhatItRefused: in a network namespace where a
// master at a public address lists 127.0.0.1 ports 1-1796, three private
// addresses, its own host and one public server (as the hostile
// master did), the terminal browser at 80x24 probes the public server
// alone and says what it did not probe while it runs: once, in the status
// line, then as a count there; after quitting, the summary on stderr.
func TestServers_BrowserSaysWhatItRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scout in tmux in a network namespace")
	}
	unshare := needNetns(t)
	bin := buildScout(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home, ready := t.TempDir(), filepath.Join(t.TempDir(), "ready")
	env := []string{"TESTBIN=" + self, "READY=" + ready, refusingMasterEnv + "=" + ready,
		"XDG_CONFIG_HOME=" + home, "HOME=" + home}
	s := tmux.Start(t, 80, 24, env, unshare, "-rn", "sh", "-c", netnsScript, "sh",
		bin, "servers", "--game", "q3", "--master", refusingMaster, "--status")
	s.WaitCheck("the refusal said", screenWait, func(sc []string) error {
		if !tmux.Contains("not probing 1800 servers at local addresses (--allow-local)")(sc) {
			return errors.New("the status line does not say it")
		}
		return fits(s, sc)
	})
	s.WaitCheck("the public server alone", screenWait, func(sc []string) error {
		if !strings.Contains(sc[0], "done in") || !strings.Contains(sc[0], "answered 1 ") || !strings.Contains(sc[0], "probed 1/1") {
			return errors.New("the title does not say the one public server listed, probed and answered")
		}
		if rs := rows(sc); len(rs) != 1 || !strings.HasPrefix(rs[0], "Public server") {
			return fmt.Errorf("rows %q, want the public server alone", rs)
		}
		return nil
	})
	s.SendKeys("Down")
	s.WaitCheck("the count", screenWait, func(sc []string) error {
		if !strings.HasPrefix(sc[len(sc)-1], "1800 local not probed") {
			return errors.New("the status line does not count them")
		}
		return fits(s, sc)
	})
	s.SendKeys("q")
	s.WaitExit(screenWait)
	text := strings.Join(s.JoinedHistory(), " ")
	for _, want := range []string{
		"1800 servers that public masters listed at local addresses or at their own were not probed (loopback 1796, master 1, private 3); --allow-local probes them",
		"1 servers listed, 1 answered",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("after the browser, the terminal lacks %q:\n%s", want, text)
		}
	}
}
