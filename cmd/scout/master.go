package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/scout-discovery/scout/fleet"
	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/master/store"
	"github.com/scout-discovery/scout/masterd"
)

func init() {
	register(cli.Command{Name: "master", Summary: "run a master server (drop-in for dpmaster; Quake III family, Quake 4, Doom 3)", Run: runMaster})
}

// storeTimeout bounds waiting for the state file's lock (another master
// still running on it).
const storeTimeout = 5 * time.Second

// runMaster is scout master: dpmaster's command line (master_flags.go),
// resolved into a masterd.Config (master_config.go), run until ctx ends.
// As dpmaster, a bad option or option value exits with status 1 and says
// which.
func runMaster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseMasterArgs(args)
	switch {
	case errors.Is(err, errMasterHelp):
		fmt.Fprint(stdout, masterUsage())
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "scout master: %v\n", err)
		return 1
	}
	set, err := opts.settings(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "scout master: %v\n", err)
		return 1
	}
	if set.PrintGames {
		for _, g := range set.Catalogue.Games() {
			fmt.Fprintf(stdout, "* %s (%s):\n   - protocols: %v\n   - options: %v\n   - heartbeats: %v (alive), %v (dead)\n   - gamenames: %v\n",
				g.Name, g.Family, g.Protocols, g.Options, g.Heartbeats, g.Flatlines, g.Gamenames)
		}
		return 0
	}
	log := slog.New(slog.DiscardHandler)
	if !set.LogOff {
		log = masterd.NewLogger(stderr, set.LogLevel, set.LogJSON)
	}
	cfg := set.Config
	cfg.Logger = log
	if set.Store != "" {
		if set.State != "" {
			fmt.Fprintln(stderr, "scout master: --state and --store: the registry is kept in one place")
			return 1
		}
		fleet.RedisLog(log)
		fc := fleet.Config{Redis: set.Store, ID: set.FleetID, Logger: log}
		if lm := cfg.API.Landmark; lm != nil {
			// In a fleet a landmark is named by its instance's id:
			// --landmark-id or --fleet-id, whichever is given, else a
			// random one.
			if set.LandmarkID != "" && set.FleetID != "" && set.LandmarkID != set.FleetID {
				fmt.Fprintln(stderr, "scout master: in a fleet the landmark's id is its --fleet-id: give one of --landmark-id and --fleet-id, or the same")
				return 1
			}
			fc.ID = cmp.Or(set.FleetID, set.LandmarkID)
			c := *lm
			fc.Landmark = &c
		}
		node, err := fleet.New(fc)
		if err != nil {
			fmt.Fprintf(stderr, "scout master: --store: %v\n", err)
			return 1
		}
		cfg.Fleet = node
		if lm := cfg.API.Landmark; lm != nil {
			c := *lm
			c.ID = node.ID()
			cfg.API.Landmark, cfg.Handler.Landmark = &c, c.ID
		}
	}
	if set.State != "" {
		s, err := store.Open(set.State, store.Options{Timeout: storeTimeout, RefuseDamaged: set.Refuse})
		if err != nil {
			log.Error("opening the state file", "path", set.State, "err", err)
			return 1
		}
		if d := s.Damage(); d != nil {
			log.Error("the state file was damaged", "path", d.Path, "damage", d.Damage.String(), "moved_to", d.MovedTo, "err", d)
		}
		defer s.Close()
		cfg.Store = s
	}
	m, err := masterd.NewMaster(time.Now(), cfg)
	if err != nil {
		log.Error("starting", "err", err)
		return 1
	}
	if err := m.Listen(); err != nil {
		log.Error("listening", "err", err)
		return 1
	}
	if err := m.Run(ctx); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
