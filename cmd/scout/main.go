// Command scout is the game-server discovery tool for the Quake III family,
// Quake 4 / Doom 3, Unreal Tournament 3 (GameSpy 4) and Valve Source games:
// a player's and an operator's commands (servers, query, master, decode,
// demo, version).
//
// Each subcommand lives in its own file in this directory and registers
// itself with [register]; this file only dispatches. The work is done by
// the importable packages at the root of the module. The research lab's
// commands (the emulated world, the simulator, the benchmarks) are
// lab/cmd/scout-lab's.
package main

import (
	"context"
	"io"

	"github.com/scout-discovery/scout/internal/cli"
)

// commands is filled by init functions in this package before main runs and
// never modified after.
var commands = cli.Commands{Prog: "scout"}

func register(c cli.Command) { commands.Register(c) }

func init() { register(cli.Version(commands.Prog)) }

func main() { commands.Main() }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands.Run(ctx, args, stdout, stderr)
}
