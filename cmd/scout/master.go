package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
)

func init() {
	register(command{name: "master", summary: "run a master server (drop-in for dpmaster; Quake III family, Quake 4, Doom 3)", run: runMaster})
}

// storeTimeout bounds waiting for the state file's lock (another master
// still running on it).
const storeTimeout = 5 * time.Second

func runMaster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := master.ParseArgs(args)
	switch {
	case errors.Is(err, master.ErrHelp):
		fmt.Fprint(stdout, master.Usage())
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "scout master: %v\n", err)
		return 2
	}
	set, err := opts.Settings(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "scout master: %v\n", err)
		return 2
	}
	if set.PrintGames {
		for _, g := range set.Catalogue.Games() {
			fmt.Fprintf(stdout, "* %s (%s):\n   - protocols: %v\n   - options: %v\n   - heartbeats: %v (alive), %v (dead)\n   - gamenames: %v\n",
				g.Name, g.Family, g.Protocols, g.Options, g.Heartbeats, g.Flatlines, g.Gamenames)
		}
		return 0
	}
	log := master.StdLogger(set, stderr)
	var st master.Store
	if set.State != "" {
		s, err := store.Open(set.State, storeTimeout)
		if err != nil {
			log.Error("opening the state file", "path", set.State, "err", err)
			return 1
		}
		defer s.Close()
		st = s
	}
	m, err := master.NewMaster(time.Now(), set, st, log)
	if err != nil {
		log.Error("starting", "err", err)
		return 1
	}
	if err := m.Listen(); err != nil {
		log.Error("listening", "err", err)
		return 1
	}
	if set.HTTP != "" {
		ln, err := net.Listen("tcp", set.HTTP)
		if err != nil {
			m.Close()
			log.Error("listening for HTTP", "addr", set.HTTP, "err", err)
			return 1
		}
		log.Info("listening", "addr", ln.Addr().String(), "port", "http")
		hs := &http.Server{Handler: m.HTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
		go hs.Serve(ln)
		defer hs.Close()
	}
	if err := m.Run(ctx); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
