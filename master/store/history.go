package store

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/scout-discovery/scout/master"
)

// The history bucket: each server's player count per 5-minute slot, one
// record per server and UTC day (package web's History keeps them and says
// what they mean). Key: the day (days since the Unix epoch) as 4 bytes
// big-endian, offset by 1<<31 so that earlier days sort first, then the
// server's address as in the "servers" bucket (8 bytes for IPv4, 20 for
// IPv6 with the day). Value: a version byte (1) then the day's counts, one
// byte each (at most MaxHistoryCounts). Days before the commit's keepFrom
// are deleted by the same commit, so the bucket holds at most the retained
// days of each server. A record that does not decode is skipped and
// counted by LoadHistory.
var historyBucket = []byte("history")

// historyVersion is the version byte of a history value.
const historyVersion = 1

// historyFill is the history bucket's page fill on splits.
const historyFill = 0.9

// MaxHistoryCounts bounds the counts of one history record.
const MaxHistoryCounts = 1440

// HistoryDay is one server's counts of one day.
type HistoryDay struct {
	Addr   netip.AddrPort
	Day    int32
	Counts []byte
}

func historyKey(day int32, a netip.AddrPort) []byte {
	k := binary.BigEndian.AppendUint32(make([]byte, 0, 4+19), uint32(int64(day)+1<<31))
	return append(k, key(a)...)
}

func dayKey(day int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int64(day)+1<<31)) }

// ApplyWithHistory is Apply with history days written and days before
// keepFrom deleted, all in the one transaction: when it returns nil all of
// it is on disk, when it fails none is.
func (s *Store) ApplyWithHistory(puts []master.Server, deletes []netip.AddrPort, days []HistoryDay, keepFrom int32) (err error) {
	return s.applyHistory(puts, deletes, days, keepFrom, nil)
}

// applyHistory is ApplyWithHistory with more work (if not nil) in the
// same transaction.
func (s *Store) applyHistory(puts []master.Server, deletes []netip.AddrPort, days []HistoryDay, keepFrom int32, more func(*bolt.Tx) error) (err error) {
	type kv struct{ k, v []byte }
	recs := make([]kv, 0, len(days))
	for _, d := range days {
		if len(d.Counts) > MaxHistoryCounts {
			continue
		}
		recs = append(recs, kv{historyKey(d.Day, d.Addr), append([]byte{historyVersion}, d.Counts...)})
	}
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	return s.apply(puts, deletes, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(historyBucket)
		if err != nil {
			return err
		}
		// Keys grow with the day: most puts land at the end (today's
		// records), so pages split full rather than half full.
		b.FillPercent = historyFill
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		// Keys sort by day: the old ones are the first.
		c, limit := b.Cursor(), dayKey(keepFrom)
		for k, _ := c.First(); k != nil && bytes.Compare(k, limit) < 0; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		if more != nil {
			return more(tx)
		}
		return nil
	})
}

// LoadHistory reads every history day. Records that do not decode are
// skipped and counted in corrupt.
func (s *Store) LoadHistory() (days []HistoryDay, corrupt int, err error) {
	defer faultsPanic()()
	defer guard(&err, "loading")
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(historyBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var a netip.AddrPort
			if len(k) < 4 || a.UnmarshalBinary(k[4:]) != nil || !a.IsValid() ||
				len(v) < 1 || v[0] != historyVersion || len(v)-1 > MaxHistoryCounts {
				corrupt++
				return nil
			}
			day := int32(int64(binary.BigEndian.Uint32(k)) - 1<<31)
			days = append(days, HistoryDay{Addr: a, Day: day, Counts: bytes.Clone(v[1:])})
			return nil
		})
	})
	return days, corrupt, err
}

// The players bucket: where each player was seen recently (package
// history's Sightings keeps them and says what they mean). Key: the
// player's name, colour codes stripped (1 to MaxPlayerKeyBytes bytes).
// Value: the name's sightings as package history encodes them
// (history.EncodeSightings, which has its own version byte); this package
// checks only their size, and history.Sightings.Load skips and counts
// what does not decode.
var playersBucket = []byte("players")

// Bounds of a players record.
const (
	MaxPlayerKeyBytes   = master.MaxPlayerNameBytes
	MaxPlayerValueBytes = 2048
)

// PlayerRecord is one player's sightings; a nil Value deletes the player.
type PlayerRecord struct {
	Key   string
	Value []byte
}

// ApplyWithPlayers is ApplyWithHistory with players' sightings written or
// deleted too, all in the one transaction. Records beyond the bounds are
// left out.
func (s *Store) ApplyWithPlayers(puts []master.Server, deletes []netip.AddrPort, days []HistoryDay, keepFrom int32, players []PlayerRecord) error {
	ps := make([]PlayerRecord, 0, len(players))
	for _, p := range players {
		if p.Key != "" && len(p.Key) <= MaxPlayerKeyBytes && len(p.Value) <= MaxPlayerValueBytes {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b PlayerRecord) int { return strings.Compare(a.Key, b.Key) })
	return s.applyHistory(puts, deletes, days, keepFrom, func(tx *bolt.Tx) error {
		if len(ps) == 0 {
			return nil
		}
		b, err := tx.CreateBucketIfNotExists(playersBucket)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.Value == nil {
				err = b.Delete([]byte(p.Key))
			} else {
				err = b.Put([]byte(p.Key), p.Value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// LoadPlayers reads every player's sightings. Records beyond the bounds
// are skipped and counted in corrupt.
func (s *Store) LoadPlayers() (players []PlayerRecord, corrupt int, err error) {
	defer faultsPanic()()
	defer guard(&err, "loading")
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(playersBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) == 0 || len(k) > MaxPlayerKeyBytes || len(v) == 0 || len(v) > MaxPlayerValueBytes {
				corrupt++
				return nil
			}
			players = append(players, PlayerRecord{Key: string(k), Value: bytes.Clone(v)})
			return nil
		})
	})
	return players, corrupt, err
}
