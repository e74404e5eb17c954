package demo

import (
	"fmt"
	"io"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/probe"
)

// Defaults of a Config whose fields are zero.
const (
	DefaultServers = 2000
	DefaultPlace   = "AU"
	// DefaultLoss is each reply's chance of being lost.
	DefaultLoss = 0.01
	// DefaultTimeout and DefaultAttempts are the probes': one retry after
	// a second, so a lost reply costs a second, not the server.
	DefaultTimeout  = time.Second
	DefaultAttempts = 2
	// DefaultRegister bounds the wait for every server to be listed.
	DefaultRegister = 20 * time.Second
)

// Config is one demonstration.
type Config struct {
	Servers int    // world size; 0 means DefaultServers
	Seed    uint64 // world, emulator and planner seed
	Place   string // the client's place, a key of population.Places; "" means DefaultPlace
	Loss    float64
	// NoLoss sets Loss to 0 (Loss 0 means DefaultLoss).
	NoLoss bool
	// StopRTT is the largest playable RTT, exclusive: a server is playable
	// when its true RTT is below it, and the oracle probes exactly those;
	// 0 means adaptive.Paper().StopRTT (200 ms).
	StopRTT time.Duration
	// Variants are the adaptive runs, between conventional and the oracle;
	// nil means DefaultVariants(StopRTT).
	Variants []Variant
	// Window is the probes in flight of every run; 0 means the ET client's
	// probe.DefaultWindow (16).
	Window int
	// Paced paces every run as scout servers does by default instead
	// (probe.Pace: the line measured, up to its MaxRate; discover.Ordered
	// then decides each target just before it is sent); Window is then
	// unused.
	Paced    bool
	Timeout  time.Duration
	Attempts int
	// Register bounds the wait for the master to list every server.
	Register time.Duration
	// Landmarks are the cities of the masters (latency.Cities names),
	// each a landmark (landmarks.go); nil means DefaultLandmarks. The
	// first lists the world for every run.
	Landmarks []string
	// DefaultRun adds, after the variants, scout servers' default order
	// as it runs without landmark masters (every master but scout's):
	// group probing over the scout variant (discover.PlanDefault),
	// named "default, no landmarks".
	DefaultRun bool
	// LandmarkRun adds the landmark run ("landmarks", before the
	// oracle): scout servers --order landmarks' plan
	// (discover.PlanLandmarks), auto-stopping at StopRTT.
	LandmarkRun bool
	// Remembered adds, with LandmarkRun, the landmark run once more after
	// every run ended ("landmarks, remembered"), with the memory its first
	// run left (package rttcache).
	Remembered bool
	// Log, when set, gets a line at each stage.
	Log io.Writer
}

// Variant is one adaptive run: a name for the table and the planner's
// constants.
type Variant struct {
	Name   string
	Params adaptive.Params
}

// DefaultVariants are the paper's algorithm (adaptive.Paper) and this
// project's variant (adaptive.Scout), both auto-stopping at stopRTT (0
// keeps theirs, 200 ms).
func DefaultVariants(stopRTT time.Duration) []Variant {
	paper, scout := adaptive.Paper(), adaptive.Scout()
	if stopRTT > 0 {
		paper.StopRTT, scout.StopRTT = stopRTT, stopRTT
	}
	return []Variant{{Name: "adaptive, paper", Params: paper}, {Name: "adaptive, scout", Params: scout}}
}

func (cfg Config) withDefaults() Config {
	if cfg.Servers == 0 {
		cfg.Servers = DefaultServers
	}
	if cfg.Place == "" {
		cfg.Place = DefaultPlace
	}
	if cfg.Loss == 0 && !cfg.NoLoss {
		cfg.Loss = DefaultLoss
	}
	if cfg.NoLoss {
		cfg.Loss = 0
	}
	if cfg.StopRTT == 0 {
		cfg.StopRTT = adaptive.Paper().StopRTT
	}
	if cfg.Variants == nil {
		cfg.Variants = DefaultVariants(cfg.StopRTT)
	}
	if cfg.Window == 0 {
		cfg.Window = probe.DefaultWindow
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.Register == 0 {
		cfg.Register = DefaultRegister
	}
	if cfg.Landmarks == nil {
		cfg.Landmarks = DefaultLandmarks
	}
	return cfg
}

func (cfg Config) logf(format string, a ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, format+"\n", a...)
	}
}
