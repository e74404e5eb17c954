package gs4

// UT3 reports most of its settings under numeric keys: "p<id>" for
// properties and "s<id>" for contexts (the ids of Unreal Engine 3's online
// settings). No public source documents them all; the names below are the
// ones gamedig 5.3.3 (protocols/ut3.js) and qstat 2.17 (gs3.c) translate,
// which agree where they overlap except that qstat calls p268435704
// "goalscore".
//
//	key          name                  source      meaning (where known)
//	p1073741825  map                   both        map name, e.g. "DM-Deck"
//	p1073741826  gametype              both        game type class, e.g. "UTGame.UTDeathmatch"
//	p1073741827  servername            both        server description (qstat: "description")
//	p1073741828  custom_mutators       gamedig     0x1C-separated list
//	p1073741829  stock_mutators        gamedig     0x1C-separated list
//	p268435717   stock_mutators        gamedig     bit mask (older builds)
//	p268435703   numbots               gamedig
//	p268435704   frag_limit            both        goal score (qstat: "goalscore")
//	p268435705   time_limit            both        minutes
//	s32779       gamemode              both        game mode context
//	s0           bot_skill             gamedig
//	s6           pure_server           gamedig
//	s7           password              gamedig
//	s8           vs_bots               gamedig
//	s10          force_respawn         gamedig
//	gamemode     joininprogress        gamedig     GameSpy's own "gamemode" key ("openplaying", ...)
//
// gamedig drops s1, s9, s11 to s14, p268435706, p268435968 and p268435969
// without naming them; their meaning is unknown, so UT3KeyName leaves them
// unnamed too.

// UT3KeyName returns the friendly name public sources give a UT3 key, and
// false for keys with no known name (including ordinary GameSpy keys such
// as "hostname", which need none).
func UT3KeyName(key string) (string, bool) {
	switch key {
	case "p1073741825":
		return "map", true
	case "p1073741826":
		return "gametype", true
	case "p1073741827":
		return "servername", true
	case "p1073741828":
		return "custom_mutators", true
	case "p1073741829", "p268435717":
		return "stock_mutators", true
	case "p268435703":
		return "numbots", true
	case "p268435704":
		return "frag_limit", true
	case "p268435705":
		return "time_limit", true
	case "s32779":
		return "gamemode", true
	case "s0":
		return "bot_skill", true
	case "s6":
		return "pure_server", true
	case "s7":
		return "password", true
	case "s8":
		return "vs_bots", true
	case "s10":
		return "force_respawn", true
	case "gamemode":
		return "joininprogress", true
	}
	return "", false
}

// NamedRule is a server key/value with the friendly name of its key.
type NamedRule struct {
	Key   string `json:"key"`            // as sent, e.g. "p1073741825"
	Name  string `json:"name,omitempty"` // from UT3KeyName; empty when unknown
	Value string `json:"value"`
}

// NamedRules returns the server key/values, in wire order, each with its
// UT3 friendly name where one is known. The raw keys are kept.
func (i Info) NamedRules() []NamedRule {
	out := make([]NamedRule, len(i.Rules))
	for k, kv := range i.Rules {
		name, _ := UT3KeyName(kv.Key)
		out[k] = NamedRule{Key: kv.Key, Name: name, Value: kv.Value}
	}
	return out
}
