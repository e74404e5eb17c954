package masterproc

import (
	"log/slog"
	"testing"
)

// Only a "listed" record's server reaches C, and a full C drops it
// rather than block the logger.
func TestListed_SendsTheListedServer(t *testing.T) {
	l := Listed{C: make(chan string, 1)}
	log := slog.New(l)
	log.Info("checked", "server", "127.0.0.1:1")
	log.Info("listed", "server", "127.0.0.1:2")
	log.Info("listed", "server", "127.0.0.1:3") // C is full: dropped
	if got := <-l.C; got != "127.0.0.1:2" {
		t.Fatalf("got %q, want 127.0.0.1:2", got)
	}
	select {
	case got := <-l.C:
		t.Fatalf("got %q after the channel was full", got)
	default:
	}
}
