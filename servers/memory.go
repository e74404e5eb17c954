package servers

import (
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/rttcache"
)

// memory is a run's use of the client's memory (Config.Memory): loaded
// before the run, its priors given to the plan when the client is where
// it was measured from, this run's outcomes recorded and saved after it.
// A nil *memory is memory off.
type memory struct {
	path    string
	cache   *rttcache.Cache
	stderr  io.Writer
	used    bool // its priors went to the plan
	moved   bool // the vantage did not match
	groups  int  // groups remembered when loaded
	saveErr error
}

// openMemory loads the memory at path ("" is off). A damaged file is
// moved aside and reported on stderr; the run goes on with an empty
// memory. A file that cannot be read turns the memory off for the run.
func openMemory(path string, stderr io.Writer) *memory {
	if path == "" {
		return nil
	}
	c, err := rttcache.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "scout servers: memory: %v\n", err)
		if c == nil {
			return nil
		}
	}
	return &memory{path: path, cache: c, stderr: stderr, groups: c.Len()}
}

// priors returns the memory's priors for a plan built after the lists
// came (reps), and the groups it has seen before (rttcache.Cache.Known);
// nil when the client is not where they were measured.
func (m *memory) priors(reps []discover.MasterReport) (map[netip.Prefix]adaptive.Prior, map[netip.Prefix]bool) {
	if m == nil {
		return nil, nil
	}
	if !m.cache.Matches(discover.Vantage(reps)) {
		m.moved = true
		return nil, nil
	}
	now := time.Now()
	p := m.cache.Priors(now)
	m.used = len(p) > 0
	return p, m.cache.Known(now)
}

// record remembers the run's outcomes and, when the run planned every
// server of its list to the end (decided, a nil listed otherwise), the
// list; then saves the memory.
func (m *memory) record(reps []discover.MasterReport, probes []discover.Outcome, listed []netip.AddrPort) {
	if m == nil {
		return
	}
	outs := make([]rttcache.Outcome, 0, len(probes))
	for _, p := range probes {
		outs = append(outs, rttcache.Outcome{Addr: p.Addr, RTT: p.RTT, Answered: p.Answered})
	}
	now := time.Now()
	m.cache.Record(now, discover.Vantage(reps), outs)
	m.cache.SetListed(now, listed)
	if m.saveErr = rttcache.Save(m.path, m.cache); m.saveErr != nil {
		fmt.Fprintf(m.stderr, "scout servers: memory: %v\n", m.saveErr)
	}
}

// MemoryReport is the "memory" object of --json's summary.
type MemoryReport struct {
	File string `json:"file"`
	// Groups were remembered when the run began; Used says the plan had
	// their RTTs (false when none were fresh, or Moved: the client's RTTs
	// to its masters are not the remembered ones).
	Groups int  `json:"groups"`
	Used   bool `json:"used"`
	Moved  bool `json:"moved,omitempty"`
	Saved  bool `json:"saved"`
}

func (m *memory) report() *MemoryReport {
	if m == nil {
		return nil
	}
	return &MemoryReport{File: m.path, Groups: m.groups, Used: m.used, Moved: m.moved, Saved: m.saveErr == nil}
}
