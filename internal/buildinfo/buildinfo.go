// Package buildinfo says which scout a binary is: its version, the commit
// and time it was built from, the Go toolchain, and the licence.
//
// A release build sets version, commit and date with the linker
// (-X github.com/scout-discovery/scout/internal/buildinfo.version=...);
// any other build falls back on what the Go toolchain recorded
// (debug.ReadBuildInfo: the module version and the VCS revision and time).
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// License is scout's licence, as an SPDX identifier.
const License = "Apache-2.0"

// Set by the linker in release builds; empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Info describes one build. Fields the build did not record are empty.
type Info struct {
	Version   string // "v1.2.3", "v1.2.3-SNAPSHOT-" and the short commit, or "(devel)"
	Commit    string // the VCS revision, "+dirty" appended for a modified tree
	Date      string // the commit or build time, RFC 3339
	GoVersion string // the toolchain that built the binary
	License   string // SPDX identifier
}

// Read returns this binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, commit, date)
}

// fromBuild merges the linker's values (which win) with the toolchain's.
func fromBuild(bi *debug.BuildInfo, version, commit, date string) Info {
	in := Info{Version: "(devel)", License: License}
	var revision, vcsTime string
	dirty := false
	if bi != nil {
		in.GoVersion = bi.GoVersion
		if bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if revision != "" && dirty {
		revision += "+dirty"
	}
	in.Commit, in.Date = revision, vcsTime
	if version != "" {
		in.Version = version
	}
	if commit != "" {
		in.Commit = commit
	}
	if date != "" {
		in.Date = date
	}
	return in
}

// String is the line `scout version` prints:
// "scout v1.2.3 (commit COMMIT, built 2026-11-28T08:00:00Z, go1.26.8, licensed under Apache-2.0)".
func (in Info) String() string {
	s := "scout " + in.Version + " ("
	if in.Commit != "" {
		s += "commit " + in.Commit + ", "
	}
	if in.Date != "" {
		s += "built " + in.Date + ", "
	}
	if in.GoVersion != "" {
		s += in.GoVersion + ", "
	}
	return s + fmt.Sprintf("licensed under %s)", in.License)
}
