package masterd

import (
	"context"
	"log/slog"
	"time"

	"github.com/scout-discovery/scout/history"
)

// HistoryFleet is a Fleet that also keeps the player-count history in
// the shared store (package fleet does, in Redis: one hash per UTC day,
// expiring with history.RetentionDays), so that every instance serves the
// same history page and a restarted instance keeps it. NewMaster reads
// it back after Join; Run writes the changed days every
// FleetHistoryInterval.
type HistoryFleet interface {
	// SaveHistory writes the days of the servers that are this
	// instance's share, merged slot by slot with what the store holds
	// (a slot without a sample keeps the stored one), and returns how
	// many it wrote.
	SaveHistory(ctx context.Context, days []history.Day) (int, error)
	// LoadHistory reads every server's days from first to last (days
	// since the Unix epoch); corrupt counts the values it skipped.
	LoadHistory(ctx context.Context, first, last int32) (days []history.Day, corrupt int, err error)
}

// FleetHistoryInterval is how often an instance of a fleet writes the
// history days changed since its last write: a sample is in the shared
// store within FleetHistoryInterval plus one write of its being recorded,
// and a kill -9 of one instance loses none of it (every live instance
// records every server's samples; a server's new owner writes its day
// with the next sample).
const FleetHistoryInterval = time.Second

// MaxHistoryRetry is the longest wait between two tries to read the
// fleet's history back while the store does not answer (an instance
// started while Redis is down): the waits double from
// FleetHistoryInterval to it, and only the first failure is logged as a
// warning, the others at debug level.
const MaxHistoryRetry = time.Minute

// historyRetry is the wait before the next try to read the fleet's
// history after failed tries in a row.
func historyRetry(failed int) time.Duration {
	d := FleetHistoryInterval
	for range min(failed, 16) {
		d *= 2
	}
	return min(d, MaxHistoryRetry)
}

// loadFleetHistory reads the days History keeps at now from hf into
// m.History, and reports whether it did. A failure is logged as a
// warning when warn is set, at debug level otherwise.
func (m *Master) loadFleetHistory(ctx context.Context, hf HistoryFleet, now time.Time, warn bool) bool {
	first := history.KeepFrom(now)
	days, corrupt, err := hf.LoadHistory(ctx, first, first+history.RetentionDays-1)
	if err != nil {
		level := slog.LevelDebug
		if warn {
			level = slog.LevelWarn
		}
		m.Log.Log(ctx, level, "reading the fleet's history: serving this instance's until it answers", "err", err)
		return false
	}
	m.History.Load(days)
	servers, _, _ := m.History.Len()
	m.Log.Info("history restored from the fleet", "servers", servers, "days", len(days), "corrupt", corrupt)
	return true
}

// keepFleetHistory writes the history's changed days to hf every
// FleetHistoryInterval until ctx ends, then once more (within
// StopTimeout of the fleet's). Until the history has been read back
// (loaded false: the store was unreachable at start) it tries that
// first, backing off (historyRetry); the writes merge, so a write before
// it erases nothing.
func (m *Master) keepFleetHistory(ctx context.Context, hf HistoryFleet, loaded bool) {
	t := time.NewTicker(FleetHistoryInterval)
	defer t.Stop()
	var pruned time.Time
	failed := 0
	if !loaded {
		failed = 1 // NewMaster's try, logged
	}
	next := time.Now().Add(historyRetry(failed))
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), FleetHistoryInterval)
			m.saveFleetHistory(sctx, hf)
			cancel()
			return
		case <-t.C:
		}
		now := time.Now()
		if !loaded && !now.Before(next) {
			if loaded = m.loadFleetHistory(ctx, hf, now, failed == 0); !loaded {
				failed++
				next = now.Add(historyRetry(failed))
			}
		}
		if now.Sub(pruned) >= historyPrune {
			m.History.Prune(now)
			pruned = now
		}
		m.saveFleetHistory(ctx, hf)
	}
}

// saveFleetHistory writes the days changed since the last write; on an
// error they are marked changed again, for the next.
func (m *Master) saveFleetHistory(ctx context.Context, hf HistoryFleet) {
	days := m.History.TakeDirty()
	if len(days) == 0 {
		return
	}
	if _, err := hf.SaveHistory(ctx, days); err != nil {
		m.History.Redirty(days)
		m.Log.Debug("writing the fleet's history", "days", len(days), "err", err)
	}
}
