package masterproc

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"
	"time"
)

// The in-process side: tests that run a master in their own process (its
// registry's log) wait for its listings through Listed instead of
// sleeping.

// Listed is a slog.Handler that sends the "server" attribute of each
// "listed" record (a master's registry listing a server) to C, dropping
// it when C is full. It keeps no other record.
type Listed struct{ C chan string }

func (l Listed) Enabled(context.Context, slog.Level) bool { return true }

func (l Listed) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "listed" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "server" {
			select {
			case l.C <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

func (l Listed) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l Listed) WithGroup(string) slog.Handler      { return l }

// Wait waits for a listing of server, dropping the others; it fails the
// test, naming who was to list it, after WaitBound.
func (l Listed) Wait(t testing.TB, server netip.AddrPort, who string) {
	t.Helper()
	deadline := time.After(WaitBound)
	for {
		select {
		case s := <-l.C:
			if s == server.String() {
				return
			}
		case <-deadline:
			t.Fatalf("%s did not list %v within %v", who, server, WaitBound)
		}
	}
}
