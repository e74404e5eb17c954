package game

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestBuiltin_NoConflicts(t *testing.T) {
	if _, err := NewCatalogue(Builtin()...); err != nil {
		t.Fatal(err)
	}
}

func TestCatalogue_ByHeartbeat(t *testing.T) {
	c := Default()
	tests := []struct {
		tag      string
		want     string
		flatline bool
		ok       bool
	}{
		{"QuakeArena-1", "Quake3Arena", false, true},
		{"Wolfenstein-1", "wolfmp", false, true},
		{"WolfFlatline-1", "wolfmp", true, true},
		{"EnemyTerritory-1", "et", false, true},
		{"ETFlatline-1", "et", true, true},
		{"DarkPlaces", "", false, false}, // identified by gamename instead
		{"quakearena-1", "", false, false},
		{"", "", false, false},
	}
	for _, tt := range tests {
		g, fl, ok := c.ByHeartbeat(tt.tag)
		if ok != tt.ok || fl != tt.flatline || (ok && g.Name != tt.want) {
			t.Errorf("ByHeartbeat(%q) = %v, %v, %v; want %s, %v, %v", tt.tag, g, fl, ok, tt.want, tt.flatline, tt.ok)
		}
	}
}

func TestCatalogue_ByProtocol(t *testing.T) {
	c := Default()
	tests := []struct {
		f    Family
		p    int
		want string
	}{
		{FamilyQ3, 66, "Quake3Arena"}, {FamilyQ3, 68, "Quake3Arena"},
		{FamilyQ3, 71, "Quake3Arena"}, // qstat -q3m,71 and -openarenam
		{FamilyQ3, 50, "wolfmp"}, {FamilyQ3, 60, "wolfmp"},
		{FamilyQ3, 84, "et"}, {FamilyQ3, 72, "et"},
		{FamilyQ3, 3, ""}, // DarkPlaces games are not anonymous
		{FamilyQ3, 69, ""},
		{FamilyDoom3, Doom3Version(2, 85), "Quake4"},
		{FamilyDoom3, Doom3Version(2, 62), "Quake4"}, // same major
		{FamilyDoom3, Doom3Version(1, 41), "Doom3"},
		{FamilyDoom3, 0, ""},
	}
	for _, tt := range tests {
		g, ok := c.ByProtocol(tt.f, tt.p)
		got := ""
		if ok {
			got = g.Name
		}
		if got != tt.want {
			t.Errorf("ByProtocol(%v, %d) = %q, want %q", tt.f, tt.p, got, tt.want)
		}
	}
}

// The gamename values come from the captured OpenArena infoResponses
// (openarena_infoResponse.hex: Quake3Arena; ..._gamename_OpenArena.hex).
func TestCatalogue_ByGamenameProtocol(t *testing.T) {
	c := Default()
	tests := []struct {
		name string
		p    int
		want string
	}{
		{"Quake3Arena", 71, "Quake3Arena"},
		{"Quake3Arena", 68, "Quake3Arena"},
		{"OpenArena", 71, "OpenArena"},
		{"OpenArena", 68, ""},
		{"Xonotic", 3, "Xonotic"},
		{"Warsow", 22, "Warsow"}, // no fixed protocol list
		{"et", 84, "et"},
		{"NoSuchGame", 3, ""},
	}
	for _, tt := range tests {
		g, ok := c.ByGamenameProtocol(tt.name, tt.p)
		got := ""
		if ok {
			got = g.Name
		}
		if got != tt.want {
			t.Errorf("ByGamenameProtocol(%q, %d) = %q, want %q", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestBuiltin_ETSendsEmptyAndFullAndReprobesEvery4Minutes(t *testing.T) {
	et, _ := Default().ByName("et")
	if et.Options != SendEmpty|SendFull {
		t.Errorf("options = %v", et.Options)
	}
	if et.Reprobe.Requests != GetChallenge|GetStatus|GetInfo || et.Reprobe.Interval != ETReprobeInterval {
		t.Errorf("reprobe = %v every %v", et.Reprobe.Requests, et.Reprobe.Interval)
	}
	q3, _ := Default().ByName("Quake3Arena")
	if oa, _ := Default().ByName("OpenArena"); oa == nil || oa.Reprobe.Requests != GetStatus {
		t.Errorf("OpenArena re-probes with %v, want getstatus (the players)", oa)
	}
	if q3.Reprobe.Requests != GetStatus || q3.Reprobe.Interval != Q3AReprobeInterval || q3.Options != 0 {
		t.Errorf("Q3A reprobe = %v every %v, options %v", q3.Reprobe.Requests, q3.Reprobe.Interval, q3.Options)
	}
}

// The examples of dpmaster's manual, section GAME PROPERTIES.
func TestApply_DpmasterExamples(t *testing.T) {
	var props []Property
	for _, args := range [][]string{
		{"Quake3Arena", "protocols+=70", "flatline=Q3ADeadHB"},
		{"wolfmp", "protocols=4321,1234"},
		{"et", "options-=send-full-servers"},
		{"Warsow", "options=send-empty-servers"},
		{"BattleArt3", "protocols=5", "heartbeat=BattleArt-1"},
	} {
		p, err := ParseProperties(args[0], args[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		props = append(props, p...)
	}
	base := Default()
	c, err := base.Apply(props...)
	if err != nil {
		t.Fatal(err)
	}
	q3, _ := c.ByName("Quake3Arena")
	if !q3.HasProtocol(70) || !q3.HasProtocol(68) {
		t.Errorf("Q3A protocols = %v", q3.Protocols)
	}
	if g, fl, ok := c.ByHeartbeat("Q3ADeadHB"); !ok || !fl || g != q3 {
		t.Errorf("Q3ADeadHB not a Q3A flatline")
	}
	if w, _ := c.ByName("wolfmp"); !slices.Equal(w.Protocols, []int{4321, 1234}) {
		t.Errorf("wolfmp protocols = %v", w.Protocols)
	}
	if et, _ := c.ByName("et"); et.Options != SendEmpty {
		t.Errorf("et options = %v", et.Options)
	}
	if w, _ := c.ByName("Warsow"); w.Options != SendEmpty {
		t.Errorf("Warsow options = %v", w.Options)
	}
	if g, _, ok := c.ByHeartbeat("BattleArt-1"); !ok || !g.Anonymous || !g.HasProtocol(5) {
		t.Errorf("new game not added: %+v", g)
	}
	// The base catalogue is untouched.
	if q3, _ := base.ByName("Quake3Arena"); q3.HasProtocol(70) {
		t.Error("Apply modified its receiver")
	}
}

func TestApply_ConflictRefused(t *testing.T) {
	p, err := ParseProperties("wolfmp", "heartbeat+=QuakeArena-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Default().Apply(p...); !errors.Is(err, ErrConflict) {
		t.Errorf("err = %v, want ErrConflict", err)
	}
}

// Negative protocols, as dpmaster's strtol reads them: "-g Quake3Arena
// protocols+=-1" makes "getservers -1" Quake3Arena's.
func TestParseProperties_NegativeProtocol(t *testing.T) {
	p, err := ParseProperties("Quake3Arena", "protocols+=-1,0x10")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Default().Apply(p...)
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{-1, 16, 68} {
		if g, ok := c.ByProtocol(FamilyQ3, proto); !ok || g.Name != "Quake3Arena" {
			t.Errorf("protocol %d: %v %v", proto, g, ok)
		}
	}
}

func TestParseProperties_Hostile(t *testing.T) {
	bad := [][]string{
		{"", "protocols=1"},
		{"Game With Space", "protocols=1"},
		{"G"},
		{"G", "protocols"},
		{"G", "=1"},
		{"G", "colour=red"},
		{"G", "protocols=abc"},
		{"G", "protocols=2147483648"},
		{"G", "protocols=-2147483649"},
		{"G", "protocols=1,,2"},
		{"G", "options=send-everything"},
		{"G", "heartbeat=a\\b"},
	}
	for _, args := range bad {
		if _, err := ParseProperties(args[0], args[1:]...); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseProperties(%q) err = %v, want ErrSyntax", args, err)
		}
	}
}

func TestPolicy(t *testing.T) {
	var zero Policy
	if !zero.Accepts("anything") {
		t.Error("zero policy refuses")
	}
	acc, err := ParsePolicy([]string{"accept", "Quake3Arena", "Transfusion"})
	if err != nil {
		t.Fatal(err)
	}
	if !acc.Accepts("Quake3Arena") || acc.Accepts("quake3arena") || acc.Accepts("et") {
		t.Error("accept policy wrong")
	}
	rej, err := ParsePolicy([]string{"reject", "AnnoyingGame"}, []string{"reject", "et"})
	if err != nil {
		t.Fatal(err)
	}
	if rej.Accepts("AnnoyingGame") || rej.Accepts("et") || !rej.Accepts("Xonotic") {
		t.Error("reject policy wrong")
	}
	for _, bad := range [][][]string{
		{{"accept"}},
		{{"allow", "x"}},
		{{"accept", "a"}, {"reject", "b"}},
	} {
		if _, err := ParsePolicy(bad...); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParsePolicy(%q) err = %v", bad, err)
		}
	}
}

func TestStringers(t *testing.T) {
	for _, s := range []interface{ String() string }{
		FamilyQ3, FamilyDoom3, FamilyGameSpy4, FamilySource, Family(99),
		Options(0), SendEmpty | SendFull, GetChallenge | GetStatus | GetInfo, Requests(0),
		OpAdd, PolicyReject,
	} {
		if s.String() == "" {
			t.Errorf("%#v: empty String", s)
		}
	}
	if got := (GetChallenge | GetStatus | GetInfo).String(); got != "getchallenge+getstatus+getinfo" {
		t.Errorf("got %q", got)
	}
}

func TestParseProperties_Reprobe(t *testing.T) {
	p, err := ParseProperties("Quake3Arena", "reprobe=10s")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Default().Apply(p...)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := c.ByName("Quake3Arena"); g.Reprobe.Interval != 10*time.Second || g.Reprobe.Requests != GetStatus {
		t.Errorf("Quake3Arena re-probe %+v, want getstatus every 10s", g.Reprobe)
	}
	if g, _ := Default().ByName("Quake3Arena"); g.Reprobe.Interval != Q3AReprobeInterval {
		t.Errorf("Apply changed the default catalogue: %v", g.Reprobe.Interval)
	}
	off, err := ParseProperties("et", "reprobe=0")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = Default().Apply(off...); err != nil {
		t.Fatal(err)
	}
	if g, _ := c.ByName("et"); g.Reprobe.Interval != 0 {
		t.Errorf("reprobe=0 left %v", g.Reprobe.Interval)
	}
	for _, bad := range []string{"reprobe=", "reprobe=10", "reprobe=500ms", "reprobe=25h", "reprobe+=1m", "reprobe-=1m", "reprobe=1m,2m", "reprobe=-1s"} {
		if _, err := ParseProperties("Quake3Arena", bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: err %v, want ErrSyntax", bad, err)
		}
	}
}

// GametypeName names the numbers a game names and passes anything else
// through as the server sent it.
func TestGame_GametypeName(t *testing.T) {
	c := Default()
	q3, _ := c.ByName("Quake3Arena")
	et, _ := c.ByName("et")
	for _, x := range []struct {
		g        *Game
		gt, want string
	}{
		{q3, "4", "CTF"}, {q3, "0", "Free for all"}, {q3, "12", "Domination"}, {q3, "13", "13"},
		{q3, "-1", "-1"}, {q3, "04", "04"}, {q3, "+4", "+4"}, {q3, "ctf", "ctf"}, {q3, "", ""},
		{et, "4", "Campaign"}, {et, "0", "0"}, {et, "99999999999999999999", "99999999999999999999"},
	} {
		if got := x.g.GametypeName(x.gt); got != x.want {
			t.Errorf("%s %q: %q, want %q", x.g.Name, x.gt, got, x.want)
		}
	}
}
