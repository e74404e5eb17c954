package tui

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/scout-discovery/scout/discover"
)

// Source runs one discovery, calling each with its events, never
// concurrently; it returns when the run has ended or ctx has.
type Source func(ctx context.Context, each func(discover.Event)) (discover.Summary, error)

// FlushEvery is how often the events of a run are handed to the browser:
// a list of thousands of servers arrives in a few seconds, and one screen
// update per batch keeps the terminal's traffic small.
const FlushEvery = 100 * time.Millisecond

// Run shows the browser on the terminal (in and out) until the player
// quits or ctx ends, running src for the first run and each refresh. It
// returns the browser as it was at the end. opt.Start and opt.Launch are
// set by Run (Launch runs the game in the terminal, the browser waiting
// until it exits).
func Run(ctx context.Context, in io.Reader, out io.Writer, opt Options, src Source) (Model, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var p *tea.Program
	runs := &runner{ctx: ctx, src: src, send: func(m tea.Msg) { p.Send(m) }}
	defer runs.stop()
	opt.Start = func(gen int) tea.Cmd {
		return func() tea.Msg { runs.start(gen); return nil }
	}
	opt.Launch = func(argv []string) tea.Cmd {
		c := exec.Command(argv[0], argv[1:]...)
		return tea.ExecProcess(c, func(err error) tea.Msg { return LaunchedMsg{Err: err} })
	}
	p = tea.NewProgram(New(opt), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	final, err := p.Run()
	m, _ := final.(Model)
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil // ended by ctx, as asked
	}
	return m, err
}

// runner runs one discovery at a time, replacing the current one when a
// refresh starts the next.
type runner struct {
	ctx  context.Context
	src  Source
	send func(tea.Msg)

	mu     sync.Mutex // guards the fields below
	cancel context.CancelFunc
	ended  chan struct{}
}

// start ends the current run, waits for it, and begins run gen.
func (r *runner) start(gen int) {
	r.stop()
	ctx, cancel := context.WithCancel(r.ctx)
	ended := make(chan struct{})
	r.mu.Lock()
	r.cancel, r.ended = cancel, ended
	r.mu.Unlock()
	go func() {
		defer close(ended)
		r.run(ctx, gen)
	}()
}

// stop ends the current run, if any, and waits for it.
func (r *runner) stop() {
	r.mu.Lock()
	cancel, ended := r.cancel, r.ended
	r.cancel, r.ended = nil, nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-ended
	}
}

// run is one discovery: its events are gathered and handed to the browser
// every FlushEvery, then the summary.
func (r *runner) run(ctx context.Context, gen int) {
	began := time.Now()
	var mu sync.Mutex
	var batch []discover.Event
	flush := func() {
		mu.Lock()
		b := batch
		batch = nil
		mu.Unlock()
		if len(b) > 0 {
			r.send(EventsMsg{Gen: gen, Events: b, Elapsed: time.Since(began)})
		}
	}
	quit := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		t := time.NewTicker(FlushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				flush()
			case <-quit:
				return
			}
		}
	}()
	sum, err := r.src(ctx, func(e discover.Event) {
		mu.Lock()
		batch = append(batch, e)
		mu.Unlock()
	})
	close(quit)
	<-flushed
	flush()
	if errors.Is(err, context.Canceled) && r.ctx.Err() == nil {
		return // replaced by a refresh: nobody waits for its summary
	}
	if sum.Took == 0 {
		sum.Took = time.Since(began)
	}
	r.send(DoneMsg{Gen: gen, Summary: sum, Err: err})
}
