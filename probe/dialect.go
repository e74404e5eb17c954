package probe

// A Dialect speaks one game's query protocol: which requests a query makes,
// how each is encoded with its token, and how replies are read into a
// [Result]. Dialects hold no per-query state; the engine passes a step's
// state back to them. The methods are unexported: the dialects are the
// ones this package provides ([Q3], [Q4], [GS4], [A2S]).
type Dialect interface {
	// Name is the short name of the protocol ("q3").
	Name() string
	// DefaultPort is the server port used when an address has none.
	DefaultPort() uint16

	// begin returns the first steps of a query. A dialect that does not
	// echo tokens returns one step.
	begin() []step
	// tokenMask keeps the bits of a token the wire can carry.
	tokenMask() uint64
	// appendRequest appends the request of st carrying tok.
	appendRequest(b []byte, st *step, tok uint64) ([]byte, error)
	// parse reads a reply.
	parse(b []byte) (reply, error)
	// handle applies the matched reply rep to st and res. It returns the
	// steps that follow (a non-echoing dialect returns at most one), and
	// whether st is complete; an incomplete step (one part of a split
	// reply) stays open. An error means rep does not answer st: it is
	// counted as garbled and st stays open.
	handle(st *step, rep reply, res *Result) (next []step, complete bool, err error)
	// stepName names a step in errors ("getstatus").
	stepName(st *step) string
}

// step is one request of a query and what it carries over from earlier
// replies.
type step struct {
	kind      uint8
	challenge []byte // from a previous reply, when the protocol has one
	rounds    uint8  // challenge round trips so far (bounded by maxChallengeRounds)
	state     any    // a dialect's reassembly state (split replies)
}

// maxChallengeRounds bounds the challenge round trips of one step, so a
// server that answers every request with a new challenge cannot keep a
// query going forever.
const maxChallengeRounds = 2

// anyKind in a reply matches whatever single request is open at that
// address (A2S's challenge reply).
const anyKind = 0xff

// reply is a parsed reply.
type reply struct {
	token    uint64
	hasToken bool  // false: match by address and kind
	kind     uint8 // the step kind it answers, or anyKind
	msg      any
}
