// Package slogwait hands tests the log records they wait for, so that a
// test waits on the program's own signal instead of sleeping.
package slogwait

import (
	"context"
	"log/slog"
)

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
