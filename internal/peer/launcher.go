package peer

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// launcher is a game server's launcher (a shell script) run in a process
// group of its own, so that stopping it stops the server it started.
type launcher struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the launcher has exited
}

// start runs bin with args, its console output to logPath. The launcher
// is stopped when the test ends, and at the latest after lifetime.
func (l *launcher) start(t testing.TB, bin string, args []string, logPath string, lifetime time.Duration) {
	t.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	l.exited = make(chan struct{})
	l.cmd = exec.Command(bin, args...)
	l.cmd.Stdout, l.cmd.Stderr = log, log
	l.cmd.SysProcAttr = ownGroup()
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { l.cmd.Wait(); close(l.exited) }()
	timer := time.AfterFunc(lifetime, l.stop)
	t.Cleanup(func() {
		timer.Stop()
		l.stop()
	})
}

// stop sends the process group SIGTERM, then SIGKILL after stopGrace
// (and to anything the launcher left behind). It returns once the
// launcher has exited.
func (l *launcher) stop() {
	stopGroup(l.cmd.Process, false)
	select {
	case <-l.exited:
	case <-time.After(stopGrace):
	}
	stopGroup(l.cmd.Process, true)
	<-l.exited
}
