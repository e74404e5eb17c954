package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
)

func init() {
	register(cli.Command{Name: "fleet", Summary: "start a fleet of scout masters sharing one Redis on loopback, for a first look", Run: runFleet})
}

const fleetAbout = `Starts --instances scout master processes on 127.0.0.1, instance i on
UDP port --port+i with its HTTP (/metrics, /servers, /api/, the page) on
--http-port+i, all sharing the registry on --redis (scout master --store).
Without --redis it starts its own redis-server (Debian's redis-server
package) on a free loopback port, with its append-only file in a
temporary directory removed at the end. Arguments after "--" go to every
scout master (for example --list-loopback to list servers on loopback).
The masters are --scout's: the scout binary beside this program, or on
the PATH.
It prints one line per instance and runs until interrupted, then stops
the instances (SIGTERM) and its redis-server.`

// FleetReadyTimeout bounds the wait for redis-server and each instance to
// be ready.
const FleetReadyTimeout = 30 * time.Second

func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fleet", "[flags] [-- scout master options]", fleetAbout, stderr)
	n := fs.Int("instances", 3, "scout master processes")
	url := fs.String("redis", "", "redis://HOST:PORT/DB to share; empty: start a redis-server on a free loopback port")
	port := fs.Int("port", 27950, "UDP port of the first instance")
	httpPort := fs.Int("http-port", 8080, "HTTP port of the first instance")
	scoutBin := fs.String("scout", "", "the scout `binary` to run each master with (default: scout beside this program, else on the PATH)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	extra := fs.Args()
	if *n < 1 || *n > 64 || *port < 1 || *port+*n > 65536 || *httpPort < 1 || *httpPort+*n > 65536 {
		return cli.UsageError(fs, "--instances 1-64, and ports that fit")
	}
	self, err := scoutPath(*scoutBin)
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab fleet: %v\n", err)
		return 1
	}
	if *url == "" {
		dir, err := os.MkdirTemp("", "scout-fleet-redis-")
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab fleet: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		stop, u, err := startRedisServer(dir)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab fleet: %v\n", err)
			return 1
		}
		defer stop()
		*url = u
		fmt.Fprintf(stdout, "redis     %s (redis-server, append-only file in %s)\n", u, dir)
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			p.Wait()
		}
	}()
	for i := range *n {
		id := "fleet-" + strconv.Itoa(i)
		udp := "127.0.0.1:" + strconv.Itoa(*port+i)
		web := "127.0.0.1:" + strconv.Itoa(*httpPort+i)
		cmd := exec.Command(self, append([]string{"master", "-l", udp, "--store", *url, "--fleet-id", id, "--http", web}, extra...)...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(stderr, "scout-lab fleet: %v\n", err)
			return 1
		}
		procs = append(procs, cmd)
		if err := waitHTTP(ctx, web); err != nil {
			fmt.Fprintf(stderr, "scout-lab fleet: %s: %v\n", id, err)
			return 1
		}
		fmt.Fprintf(stdout, "%-9s master udp %s  http http://%s/  pid %d\n", id, udp, web, cmd.Process.Pid)
	}
	fmt.Fprintln(stdout, "running; interrupt (Ctrl-C) to stop")
	<-ctx.Done()
	return 0
}

// startRedisServer starts redis-server on a free loopback port with its
// files in dir, and returns once it accepts connections.
func startRedisServer(dir string) (stop func(), url string, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("redis-server not found (apt-get install redis-server), or pass --redis: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--save", "", "--daemonize", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			return nil, "", errors.New("redis-server exited before it was ready")
		}
	case <-time.After(FleetReadyTimeout):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, "", fmt.Errorf("redis-server not ready in %v", FleetReadyTimeout)
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	return stop, fmt.Sprintf("redis://127.0.0.1:%d/0", p), nil
}

// waitHTTP returns once addr accepts TCP connections (the instance has
// joined the fleet and opened its sockets).
func waitHTTP(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, FleetReadyTimeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening on %s: %w", addr, err)
		case <-t.C:
		}
	}
}

// scoutPath returns the scout binary to start the masters with: given, or
// scout beside this program, or scout on the PATH.
func scoutPath(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "scout")
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	p, err := exec.LookPath("scout")
	if err != nil {
		return "", fmt.Errorf("no scout binary beside this program or on the PATH: give --scout")
	}
	return p, nil
}
