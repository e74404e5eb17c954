package masterd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scout-discovery/scout/history"
)

// failingHistory is a HistoryFleet whose store does not answer until up
// is set.
type failingHistory struct {
	up    atomic.Bool
	loads atomic.Int32
}

func (f *failingHistory) SaveHistory(context.Context, []history.Day) (int, error) {
	if !f.up.Load() {
		return 0, errors.New("dial tcp: connection refused")
	}
	return 0, nil
}

func (f *failingHistory) LoadHistory(context.Context, int32, int32) ([]history.Day, int, error) {
	f.loads.Add(1)
	if !f.up.Load() {
		return nil, 0, errors.New("dial tcp: connection refused")
	}
	return nil, 0, nil
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An instance started while the fleet's store is down tries to read the
// history back with a backoff up to MaxHistoryRetry, says so once (at
// NewMaster: the loop's tries log at debug level), and reads it within
// MaxHistoryRetry of the store coming back.
func TestFleetHistory_StoreDownBacksOffAndWarnsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log lockedBuffer
		m := &Master{History: history.New(), Log: NewLogger(&log, slog.LevelInfo, false)}
		hf := &failingHistory{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { m.keepFleetHistory(ctx, hf, false); close(done) }()

		time.Sleep(10 * time.Minute)
		synctest.Wait()
		loads := hf.loads.Load()
		// 2, 4, ..., 32 s, then every minute: 5 + 9 tries in 10 minutes
		// (one a second before).
		if loads < 10 || loads > 16 {
			t.Errorf("%d tries to read the history in 10 minutes, want 10-16 (a backoff to a minute)", loads)
		}
		if n := strings.Count(log.String(), "level=WARN"); n != 0 {
			t.Errorf("%d warnings from the retries, want none (NewMaster warned once):\n%s", n, log.String())
		}
		hf.up.Store(true)
		time.Sleep(MaxHistoryRetry)
		synctest.Wait()
		if !strings.Contains(log.String(), "history restored from the fleet") {
			t.Errorf("not read within %v of the store answering:\n%s", MaxHistoryRetry, log.String())
		}
		cancel()
		<-done
	})
}

func TestHistoryRetry_DoublesToTheBound(t *testing.T) {
	for failed, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		if got := historyRetry(failed); got != want {
			t.Errorf("historyRetry(%d) = %v, want %v", failed, got, want)
		}
	}
	if got := historyRetry(1000); got != MaxHistoryRetry {
		t.Errorf("historyRetry(1000) = %v", got)
	}
}
