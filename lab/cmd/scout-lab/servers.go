package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/rttplot"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/servers"
)

func init() {
	register(cli.Command{Name: "servers", Summary: "scout servers against an emulated world (--world-map), with the run's chart (--plot)", Run: runServers})
}

const serversAbout = `scout servers (the product's command, below) with two options of the lab:
--world-map FILE probes an emulated world ('scout-lab world --map-out FILE')
over loopback, through its address table; --plot FILE writes the run's RTT
against probe time (.svg or .png) with the phases, the running 2nd
percentile and the auto-stop line (--order master or adaptive).`

func runServers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("servers", "[flags]", serversAbout+"\n\n"+servers.Help(), stderr)
	f := servers.AddFlags(fs)
	worldMap := fs.String("world-map", "", "an emulated world's address table (loopnat): probe its servers over loopback")
	plot := fs.String("plot", "", "write the RTT-vs-time chart of the run to `FILE` (.svg or .png)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	bad := func(format string, a ...any) int {
		return cli.UsageError(fs, ""+format+"", a...)
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (masters go with --master)", fs.Arg(0))
	}
	cfg, err := f.Config()
	if err != nil {
		return bad("%v", err)
	}
	if p := strings.ToLower(*plot); p != "" && !strings.HasSuffix(p, ".svg") && !strings.HasSuffix(p, ".png") {
		return bad("--plot %q: the file name must end in .svg or .png", *plot)
	}
	if *worldMap != "" {
		// An emulated world's public addresses are another world's next
		// time: its RTTs are not remembered unless a file is named.
		if !flagSet(fs, "memory-file") {
			cfg.Memory = ""
		}
		table, err := loopnat.Load(*worldMap)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab servers: %v\n", err)
			return 1
		}
		cfg.Listen = func() (probe.Conn, io.Closer, error) { return listenWorld(table) }
	}
	cfg.KeepProbes = *plot != ""
	res, err := servers.Run(ctx, cfg, stdout, stderr)
	if *plot != "" && (err == nil || cfg.Order.Order == "adaptive") {
		name := map[string]string{"master": "conventional", "adaptive": "adaptive"}[cfg.Order.Order]
		if name != "" {
			series := rttplot.RunSeries(name, res.Probes, res.StopAt, cfg.Order.Params())
			err = errors.Join(err, rttplot.WriteRuns(*plot, "scout servers --order "+cfg.Order.Order, cfg.Order.AutoStop, series))
		}
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "scout-lab servers: %v\n", err)
	}
	if res.Answered == 0 {
		return 1
	}
	return 0
}

// listenWorld opens a UDP socket that reaches an emulated world's servers
// at their public addresses through table, read with the kernel's receive
// timestamps.
func listenWorld(table *loopnat.Table) (probe.Conn, io.Closer, error) {
	c, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, nil, err
	}
	sc, _ := probe.KernelTimestamps(c)
	return loopnat.Wrap(sc.(loopnat.PacketConn), table), c, nil
}
