package fleet

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
)

// The player history (package web's day chunks) is kept in Redis, one
// hash per UTC day:
//
//	PREFIX history:DAY  hash: field = server address, value = the day's
//	                    history.SlotsPerDay counts, one byte per slot
//	                    (history.NoSample where none), expiring at the end of
//	                    the last day history.History keeps it
//	                    (DAY + history.RetentionDays, in days since the epoch)
//
// so it is bounded by the servers × history.RetentionDays and every instance
// serves the same history page, and a restarted instance (or a new one)
// reads it back. Every instance records every server's samples (its own
// verifications and the others', which it applies); each writes those of
// its own share only (master.Rendezvous), so a day is written once per
// change by the fleet, not once per instance. A write merges slot by slot
// (histScript): a slot the writer has no sample for keeps what Redis
// holds, so an instance started while Redis was unreachable, or a new
// owner of a server, never erases samples it did not see.
const histScript = `local exp = ARGV[1]
for i = 2, #ARGV, 2 do
  local new = ARGV[i+1]
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if cur and #cur == #new and string.find(new, '\255', 1, true) then
    local out, pos = {}, 1
    for s, e in string.gmatch(new, '()[^\255]+()') do
      out[#out+1] = string.sub(cur, pos, s-1)
      out[#out+1] = string.sub(new, s, e-1)
      pos = e
    end
    out[#out+1] = string.sub(cur, pos)
    new = table.concat(out)
  end
  redis.call('HSET', KEYS[1], ARGV[i], new)
end
redis.call('EXPIREAT', KEYS[1], exp)
return (#ARGV - 1) / 2`

// HistoryBatch is the most servers' days one history script call
// (histScript) merges. Redis runs one script at a time and nothing else
// meanwhile, so a call must stay short: the verifications' scripts of
// every instance wait behind it. At most 64 days (64 HGET and HSET of
// history.SlotsPerDay bytes, a merge per run of samples) is well under a
// millisecond; a call of 1,000 (PageSize, before) took 37-88 ms in the
// 1,000,000-server fleet benchmark's SLOWLOG.
const HistoryBatch = 64

// HistoryCallsPerTrip is the most history script calls sent in one round
// trip (a pipeline): a write of many days (HistoryCallsPerTrip ×
// HistoryBatch servers per trip) is many short trips, each well within
// Config.Timeout, instead of one that Redis is still running when the
// client gives up (and gives the days back, to be written again).
const HistoryCallsPerTrip = 8

// histKey is the hash of one day's counts.
func (n *Node) histKey(day int32) string {
	return n.cfg.Prefix + "history:" + strconv.FormatInt(int64(day), 10)
}

// histExpiry is when day's hash expires: once no instance's History
// keeps day (history.KeepFrom is past it).
func histExpiry(day int32) int64 {
	return (int64(day) + history.RetentionDays) * 86400
}

// SaveHistory writes the days of servers that are this instance's share
// in round 0 (the plain rendezvous owner, whatever the re-probe round;
// all of them while it is not among the live instances it knows, as
// master.Rendezvous.Mine says), merged slot by slot into what Redis
// holds, by one script call per day and up to HistoryBatch servers, in
// pipelines of up to HistoryCallsPerTrip calls, and returns how many it
// wrote. Days of the others' servers are left to them. On an error
// nothing is known to be written (some may be: a merge written twice is
// the same): the caller gives the days back to its History (Redirty)
// and tries again.
func (n *Node) SaveHistory(ctx context.Context, days []history.Day) (int, error) {
	n.mu.Lock()
	share := master.NewRendezvous(n.cfg.ID, n.live)
	n.mu.Unlock()
	byDay := map[int32][]any{}
	written := 0
	for i := range days {
		d := &days[i]
		if !share.Mine(d.Addr, 0) { // round 0: the plain rendezvous owner, stable
			continue
		}
		if byDay[d.Day] == nil {
			byDay[d.Day] = []any{histExpiry(d.Day)}
		}
		byDay[d.Day] = append(byDay[d.Day], d.Addr.String(), string(d.Counts[:]))
		written++
	}
	if written == 0 {
		return 0, nil
	}
	start := time.Now()
	err := n.writeHistory(ctx, byDay)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = n.loadScripts(ctx); err == nil {
			_, err = n.SaveHistory(ctx, days)
			return written, err
		}
	}
	n.stats.observe(start)
	if err != nil {
		n.failed(err)
		return 0, fmt.Errorf("fleet: writing %d history days: %w", written, err)
	}
	n.stats.histWritten.Add(uint64(written))
	return written, nil
}

// writeHistory writes byDay (each day's expiry, then address and counts
// pairs) in script calls of up to HistoryBatch servers, sent in
// pipelines of up to HistoryCallsPerTrip calls, one after the other.
func (n *Node) writeHistory(ctx context.Context, byDay map[int32][]any) error {
	pipe := n.rdb.Pipeline()
	for day, args := range byDay {
		key := []string{n.histKey(day)}
		exp, rest := args[0], args[1:]
		for len(rest) > 0 {
			k := min(len(rest), 2*HistoryBatch)
			pipe.EvalSha(ctx, n.hist.Hash(), key, append([]any{exp}, rest[:k]...)...)
			rest = rest[k:]
			if pipe.Len() >= HistoryCallsPerTrip {
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
		}
	}
	if pipe.Len() == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	return err
}

// LoadHistory reads the days from first to last (days since the Unix
// epoch) of every server, in pages of PageSize (HSCAN). A value of the
// wrong length is skipped and counted in corrupt.
func (n *Node) LoadHistory(ctx context.Context, first, last int32) (days []history.Day, corrupt int, err error) {
	for day := first; day <= last; day++ {
		key := n.histKey(day)
		var cursor uint64
		for {
			start := time.Now()
			kv, next, err := n.rdb.HScan(ctx, key, cursor, "*", int64(n.cfg.PageSize)).Result()
			n.stats.observe(start)
			if err != nil {
				n.failed(err)
				return nil, 0, fmt.Errorf("fleet: reading the history of day %d: %w", day, err)
			}
			for i := 0; i+1 < len(kv); i += 2 {
				a, err := netip.ParseAddrPort(kv[i])
				if err != nil || len(kv[i+1]) != history.SlotsPerDay {
					corrupt++
					continue
				}
				d := history.Day{Addr: a, Day: day}
				copy(d.Counts[:], kv[i+1])
				days = append(days, d)
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	n.succeeded()
	return days, corrupt, nil
}
