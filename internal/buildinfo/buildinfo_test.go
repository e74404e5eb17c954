package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild_LinkerWins(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Version: "v0.0.0-20261128080000-abcdef123456"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abcdef1234567890"},
			{Key: "vcs.time", Value: "2026-11-28T08:00:00Z"},
		},
	}
	got := fromBuild(bi, "v1.2.3", "0123456789ab", "2026-11-29T10:00:00Z")
	want := Info{Version: "v1.2.3", Commit: "0123456789ab", Date: "2026-11-29T10:00:00Z", GoVersion: "go1.26.8", License: "Apache-2.0"}
	if got != want {
		t.Fatalf("fromBuild = %+v, want %+v", got, want)
	}
}

func TestFromBuild_ToolchainFallback(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abcdef1234567890"},
			{Key: "vcs.time", Value: "2026-11-28T08:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := fromBuild(bi, "", "", "")
	want := Info{Version: "(devel)", Commit: "abcdef1234567890+dirty", Date: "2026-11-28T08:00:00Z", GoVersion: "go1.26.8", License: "Apache-2.0"}
	if got != want {
		t.Fatalf("fromBuild = %+v, want %+v", got, want)
	}
}

func TestFromBuild_NoBuildInfo(t *testing.T) {
	got := fromBuild(nil, "", "", "")
	if got.Version != "(devel)" || got.License != License || got.Commit != "" {
		t.Fatalf("fromBuild(nil) = %+v", got)
	}
	if s := got.String(); s != "scout (devel) (licensed under Apache-2.0)" {
		t.Fatalf("String = %q", s)
	}
}

func TestInfo_String(t *testing.T) {
	in := Info{Version: "v1.2.3", Commit: "abc1234", Date: "2026-11-28T08:00:00Z", GoVersion: "go1.26.8", License: "Apache-2.0"}
	want := "scout v1.2.3 (commit abc1234, built 2026-11-28T08:00:00Z, go1.26.8, licensed under Apache-2.0)"
	if s := in.String(); s != want {
		t.Fatalf("String = %q, want %q", s, want)
	}
}
