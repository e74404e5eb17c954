// Package report runs the simulator the way scout-lab sim does and prints
// what it found: the paper's Table 2 beside the simulated rows, every
// variant's auto-stop share, the spread over seeds, and on a measured mesh
// (MeshSpec) the landmark strategies' probe shares, the bounds they stay
// within and the far clients' ratios to the oracle; it writes the
// per-probe trace and the paper's figures (rttplot).
package report
