// Command scout-lab is scout's research and benchmark lab: the emulated
// world of game servers on loopback, the discrete-event simulator and its
// tables, the real-mesh evaluation of landmarks, the load generators and
// the benchmarks behind BENCHMARKS.md and EVALUATION.md, a local fleet of
// masters, and scout servers against an emulated world with its plot.
//
// Each subcommand lives in its own file in this directory and registers
// itself with [register]; this file only dispatches. The work is done by
// the lab's packages (lab/...) and the product's.
package main

import (
	"context"
	"io"

	"github.com/scout-discovery/scout/internal/cli"
)

// commands is filled by init functions in this package before main runs and
// never modified after.
var commands = cli.Commands{Prog: "scout-lab"}

func register(c cli.Command) { commands.Register(c) }

func init() { register(cli.Version(commands.Prog)) }

func main() { commands.Main() }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands.Run(ctx, args, stdout, stderr)
}
