// Command playable counts the playable servers of scout demo's world (true
// RTT below 200 ms from the player's place, before jitter) and how many of
// them sit just under the line, in the world the demo builds now
// (population.FittedVantage, the per-vantage residual) and in the one it
// built before it (population.Fitted, the residual of all city pairs). A server just under 200 ms measures over it when the emulator's
// jitter and the loopback's own delay lengthen its reply, which is why the
// demo counts a server found by the world's ground truth, not by the RTT
// its reply measured (demo.Found). EVALUATION.md ("The demo") quotes it:
//
//	go run ./lab/demo/internal/playable
//	go run ./lab/demo/internal/playable -place JP -servers 300 -seed 5
//
// The output is the same for the same flags.
package main

import (
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/scout-discovery/scout/lab/demo"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/world"
)

func main() {
	servers := flag.Int("servers", demo.DefaultServers, "world size, as scout demo --servers")
	seed := flag.Uint64("seed", 1, "world seed, as scout demo --seed")
	place := flag.String("place", demo.DefaultPlace, "the player's place, as scout demo --place")
	stop := flag.Duration("stop", 200*time.Millisecond, "the largest playable RTT, exclusive")
	band := flag.Duration("band", 20*time.Millisecond, "how far under --stop counts as just under the line")
	flag.Parse()
	p, ok := population.Places()[*place]
	if !ok {
		log.Fatalf("unknown place %q", *place)
	}
	fmt.Printf("scout demo's world: %d ET servers, seed %d, from %s; playable: true RTT < %v\n",
		*servers, *seed, p.City.Name, *stop)
	for _, w := range []struct {
		name string
		cfg  population.Config
	}{
		{"now (FittedVantage)", population.FittedVantage(population.ET, *servers, *seed)},
		{"before (Fitted)", population.Fitted(population.ET, *servers, *seed)},
	} {
		pop, err := population.Build(w.cfg)
		if err != nil {
			log.Fatal(err)
		}
		playable, near := 0, 0
		for _, r := range pop.RTTs(p) {
			r = min(r, world.MaxRTT) // as demo.Build gives the emulator
			if r < *stop {
				playable++
				if r >= *stop-*band {
					near++
				}
			}
		}
		fmt.Printf("  %-24s %4d playable, %4d of them at %v-%v\n", w.name, playable, near, *stop-*band, *stop)
	}
}
