package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Encoding is a server-list query whose reply HandlePacket left to be
// encoded off the socket loop (HandlerDeps.DeferEncoding): the shell
// passes it to Handler.Encode, from another goroutine, and sends what
// that returns. It holds the resolved query, not its reply; nothing has
// been reserved from the limits for it yet.
type Encoding struct {
	to        netip.AddrPort
	kind      Kind // the reply's packets' kind
	f         filter
	form      replyForm
	every     bool
	landmarks lmAsk // follow the list with the landmark packets
	lane      replyLane
	// cookie, for a request that asked for one, goes before the list
	// when the list is sent, or alone with "again" when it is not
	// (cookie.go); at most cookieMax bytes, the request's size.
	cookie    *q3.Cookie
	cookieMax int
}

// To returns the address the reply goes to.
func (e *Encoding) To() netip.AddrPort { return e.to }

// SameReply reports whether o asks for the same reply as e (its
// destination aside): Encode encodes such jobs once.
func (e *Encoding) SameReply(o *Encoding) bool {
	return e.f == o.f && e.form == o.form && e.every == o.every && e.kind == o.kind
}

// reply returns the Outgoing that stands for the reply to a list query
// (f in form, from to), or, when the reply is at hand, appends its
// packets. The reply is deferred (one Outgoing with Encode set, no
// payload) if the handler defers encodings and f's game and protocol
// list at least HandlerDeps.DeferEncoding servers, unless it is cached
// already and no landmark packets are asked (those are built per query).
func (h *Handler) reply(now time.Time, to netip.AddrPort, k Kind, f filter, form replyForm, every bool, landmarks lmAsk, lane replyLane, dst []Outgoing) []Outgoing {
	a, n := h.reg.cachedAnswer(now, f, form)
	if h.deps.DeferEncoding > 0 && n >= h.deps.DeferEncoding && (a == nil || landmarks != 0) {
		h.stats.deferred.Add(1)
		return append(dst, Outgoing{To: to, Kind: k, Encode: &Encoding{
			to: to, kind: k, f: f, form: form, every: every, landmarks: landmarks, lane: lane,
		}})
	}
	if a == nil {
		var err error
		if a, err = h.reg.answer(now, f, form, every); err != nil {
			h.log.Error("encoding a server list", "err", err)
			return h.drop(dst, k, to, ReasonMalformed)
		}
	}
	return h.sendReply(now, to, k, a, f, landmarks, lane, dst)
}

// sendReply sends a and, if asked, the landmark packets after it.
func (h *Handler) sendReply(now time.Time, to netip.AddrPort, k Kind, a *answer, f filter, landmarks lmAsk, lane replyLane, dst []Outgoing) []Outgoing {
	n := len(dst)
	dst = h.sendList(now, to, k, a, lane, dst)
	if len(dst) > n && landmarks != 0 {
		dst = h.sendLandmarks(now, to, f, landmarks&lmPeers != 0, lane, dst)
	}
	return dst
}

// Encoded is the encoded reply of one query shape (Handler.Encode), to be
// sent by Handler.SendEncoded.
type Encoded struct {
	a   *answer // nil: the encoding failed
	job *Encoding
}

// Encode encodes the reply of job at now (the current listing's, from
// its cache if it is there, and cached if there is room). Jobs that ask
// for the same reply (SameReply) can be sent this one encoding.
//
// Encode is safe for concurrent use with HandlePacket; the shell calls
// it off its socket loop, so that encoding a large listing (tens of
// milliseconds at 1,000,000 servers) does not hold up other packets.
func (h *Handler) Encode(now time.Time, job *Encoding) *Encoded {
	a, err := h.reg.answer(now, job.f, job.form, job.every)
	if err != nil {
		h.log.Error("encoding a server list", "err", err)
		a = nil
	}
	return &Encoded{a: a, job: job}
}

// SendEncoded appends the packets of r to each of jobs (which ask for the
// reply r was encoded for) at now: each reply is reserved from the
// response limiter and the global budget at now, all or nothing, as
// HandlePacket does with the replies it sends itself. The shell passes
// the time after the encoding: a reservation is timed when its bytes
// leave, not when the query came.
func (h *Handler) SendEncoded(now time.Time, r *Encoded, jobs []*Encoding, dst []Outgoing) []Outgoing {
	for _, j := range jobs {
		if r.a == nil || !j.SameReply(r.job) {
			dst = h.drop(dst, j.kind, j.to, ReasonMalformed)
			continue
		}
		n := len(dst)
		dst = h.sendReply(now, j.to, j.kind, r.a, j.f, j.landmarks, j.lane, dst)
		dst = h.sendCookie(dst, n, j.to, j.cookie, j.cookieMax)
	}
	return dst
}
