package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/scout-discovery/scout/fleet"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/internal/privdrop"
	"github.com/scout-discovery/scout/master/store"
	"github.com/scout-discovery/scout/masterd"
)

func init() {
	register(cli.Command{Name: "master", Summary: "run a master server (drop-in for dpmaster; Quake III family, Quake 4, Doom 3)", Run: runMaster})
}

// storeTimeout bounds waiting for the state file's lock (another master
// still running on it).
const storeTimeout = 5 * time.Second

// errStateFile: the state file could not be opened (the log says why).
var errStateFile = errors.New("the state file could not be opened")

// runMaster is scout master: dpmaster's command line and the --config
// file (master_flags.go, master_config.go) resolved into a masterd.Config,
// run until ctx ends. As dpmaster, a bad option or option value exits
// with status 1 and says which.
func runMaster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// SIGHUP reloads: caught from the start, so a start-up that takes long
	// (a fleet's first read) is not ended by one.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	set, err := parseMaster(ctx, args)
	switch {
	case errors.Is(err, errMasterHelp):
		fmt.Fprint(stdout, masterUsage())
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "scout master: %v\nRun 'scout master -h' for its options.\n", err)
		return 1
	}
	if set.PrintGames {
		printGames(stdout, cmp.Or(set.Config.Registry.Catalogue, game.Default()))
		return 0
	}
	level := new(slog.LevelVar)
	level.Set(set.LogLevel)
	log := slog.New(slog.DiscardHandler)
	if !set.LogOff {
		log = masterd.NewLogger(stderr, level, set.LogJSON)
	}
	deps, closeDeps, err := masterDeps(set, log)
	if err != nil {
		if !errors.Is(err, errStateFile) { // logged already
			fmt.Fprintf(stderr, "scout master: %v\n", err)
		}
		return 1
	}
	defer closeDeps()
	m, err := masterd.NewMaster(time.Now(), set.Config, deps)
	if err != nil {
		log.Error("starting", "err", err)
		return 1
	}
	if err := m.Listen(); err != nil {
		log.Error("listening", "err", err)
		return 1
	}
	// Bound and opened: root is no longer needed (-u, -j).
	drop := privdrop.Options{User: set.User, Jail: set.Jail}
	if err := privdrop.Drop(drop); err != nil {
		log.Error("dropping privileges", "err", err)
		return 1
	}
	if drop != (privdrop.Options{}) {
		log.Info("privileges dropped", "user", drop.User, "jail", drop.Jail)
	}
	go reloadOnHUP(ctx, hup, args, set, m, level, log)
	if err := m.Run(ctx); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// printGames is a bare -g: the game catalogue, as dpmaster prints its.
func printGames(w io.Writer, cat *game.Catalogue) {
	for _, g := range cat.Games() {
		fmt.Fprintf(w, "* %s (%s):\n   - protocols: %v\n   - options: %v\n   - heartbeats: %v (alive), %v (dead)\n   - gamenames: %v\n",
			g.Name, g.Family, g.Protocols, g.Options, g.Heartbeats, g.Flatlines, g.Gamenames)
	}
}

// masterDeps opens what the master works with: the fleet on --store's
// Redis, or the --state file, and the logger.
func masterDeps(set masterSetup, log *slog.Logger) (masterd.Deps, func(), error) {
	deps := masterd.Deps{Logger: log}
	switch {
	case set.Redis != "" && set.State != "":
		return deps, nil, errors.New("--state and --store: the registry is kept in one place")
	case set.Redis != "":
		fleet.RedisLog(log)
		fc := fleet.Config{Redis: set.Redis, ID: set.FleetID, Logger: log}
		if lm := set.Config.Landmark; lm != nil {
			// In a fleet a landmark is named by its instance's id:
			// --landmark-id or --fleet-id, whichever is given, else a
			// random one (masterd takes the instance's).
			fc.ID = lm.ID
			c := *lm
			fc.Landmark = &c
		}
		node, err := fleet.New(fc)
		if err != nil {
			return deps, nil, fmt.Errorf("--store: %v", err)
		}
		deps.Fleet = node
	case set.State != "":
		s, err := store.Open(set.State, store.Options{Timeout: storeTimeout, RefuseDamaged: set.RefuseDamaged})
		var locked *store.LockedError
		switch {
		case errors.As(err, &locked):
			log.Error("the state file is in use: another master (or another program) has it open; stop it, or give this master another --state",
				"path", set.State, "holder_pid", locked.PID, "err", err)
			return deps, nil, errStateFile
		case err != nil:
			log.Error("opening the state file", "path", set.State, "err", err)
			return deps, nil, errStateFile
		}
		if d := s.Damage(); d != nil {
			log.Error("the state file was damaged", "path", d.Path, "damage", d.Damage.String(), "moved_to", d.MovedTo, "err", d)
		}
		deps.Store = s
		return deps, func() { s.Close() }, nil
	}
	return deps, func() {}, nil
}

// reloadOnHUP reads the command line and its --config file again at each
// SIGHUP and applies what may change while the master runs
// (masterd.Master.Reload, and the log level), logging what changed and
// what needs a restart. A configuration that does not parse, or that the
// master cannot run with, is logged and changes nothing.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, args []string, running masterSetup, m *masterd.Master, level *slog.LevelVar, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		set, err := parseMaster(ctx, args)
		if err != nil {
			log.Error("reload refused: the configuration does not parse; nothing changed", "err", err)
			continue
		}
		changed, restart, err := m.Reload(time.Now(), set.Config)
		if err != nil {
			log.Error("reload refused: nothing changed", "err", err)
			continue
		}
		if set.LogLevel != running.LogLevel {
			level.Set(set.LogLevel)
			changed = append(changed, "verbose")
		}
		for _, f := range []struct {
			name string
			same bool
		}{
			{"state", set.State == running.State}, {"refuse-damaged-state", set.RefuseDamaged == running.RefuseDamaged},
			{"store", set.Redis == running.Redis}, {"fleet-id", set.FleetID == running.FleetID},
			{"log-format", set.LogJSON == running.LogJSON}, {"verbose 0", set.LogOff == running.LogOff},
			{"user", set.User == running.User}, {"jail-path", set.Jail == running.Jail},
		} {
			if !f.same {
				restart = append(restart, f.name)
			}
		}
		running.LogLevel = set.LogLevel
		log.Info("reloaded", "changed", changed, "servers", len(m.Registry.Servers(nil)))
		if len(restart) > 0 {
			log.Warn("changed in the configuration, needs a restart to apply", "options", restart)
		}
	}
}
