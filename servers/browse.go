package servers

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/scout-discovery/scout/browser/tui"
	"github.com/scout-discovery/scout/discover"
)

// browsing reports whether a run opens the interactive browser: lines
// were not asked for (--json, --plain), the output and the input are a
// terminal, and the servers come from masters in their order: the
// browser lists every server, so it takes conventional discovery unless
// another order was asked for (--order), which prints lines (the LAN
// too).
func browsing(cfg Config, stdout io.Writer) bool {
	if cfg.JSON || cfg.Plain || cfg.LAN || (cfg.Order.Given && cfg.Order.Order != "" && cfg.Order.Order != "master") {
		return false
	}
	f, ok := stdout.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && term.IsTerminal(int(os.Stdin.Fd()))
}

// browse runs the interactive browser on the terminal: each run (the
// first, and one per refresh) asks the masters and probes their servers
// again. When the player quits, the addresses copied and the last run's
// summary are printed on the terminal's normal screen.
func browse(ctx context.Context, cfg Config, stdout, stderr io.Writer) (Result, error) {
	cmds, err := tui.LoadCommands(tui.ConfigPath())
	if err != nil {
		fmt.Fprintf(stderr, "scout servers: the launch configuration: %v (no game can be started)\n", err)
	}
	dcfg, unresolved, err := prepare(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	src := func(ctx context.Context, each func(discover.Event)) (discover.Summary, error) {
		if cfg.MaxTime > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, cfg.MaxTime)
			defer cancel()
		}
		for _, r := range unresolved {
			each(discover.MasterDone{MasterReport: r})
		}
		mconn, mc, err := cfg.Listen()
		if err != nil {
			return discover.Summary{}, err
		}
		defer mc.Close()
		pconn, pc, err := cfg.Listen()
		if err != nil {
			return discover.Summary{}, err
		}
		defer pc.Close()
		sum, err := discover.Discover(ctx, mconn, pconn, dcfg, each)
		sum.Masters = append(unresolved, sum.Masters...)
		return sum, err
	}
	opt := tui.Options{Game: cfg.Game.Name, Masters: len(dcfg.Masters) + len(unresolved), Filter: cfg.Filter,
		Order: cfg.Sort, Commands: cmds, ConfigPath: tui.ConfigPath()}
	m, err := tui.Run(ctx, os.Stdin, stdout, opt, src)
	for _, a := range m.Copied() {
		fmt.Fprintf(stdout, "copied %s\n", a)
	}
	if done, ok := m.Done(); ok {
		warnRefused(done.Summary, stderr)
	}
	listed, answered := m.Counts()
	fmt.Fprintf(stdout, "%d servers listed, %d answered\n", listed, answered)
	return Result{Answered: answered}, err
}
