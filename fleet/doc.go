// Package fleet shares one master registry among several scout master
// instances through Redis (github.com/redis/go-redis/v9), so that game
// servers may heartbeat to any instance and players ask any of them. It
// is part of the master's shell: it owns a Redis connection, goroutines
// and the clock; the decisions stay in package master (Registry.Apply,
// Registry.ApplyRemoval, master.Rendezvous), which it feeds.
//
// Every instance keeps its own in-memory registry and cached answers, so
// answers go at in-memory speed; Redis holds the verified records and
// the stream of changes each instance tails.
//
// # Keys (Config.Prefix, "scout:master:" by default)
//
//	PREFIX servers    hash: field = server address ("1.2.3.4:27960",
//	                  "[2001:db8::1]:27960"), value = version + record
//	PREFIX changes    stream of changes: a = address, then v = the new
//	                  value (a put) or d = the version removed (a removal),
//	                  i = the instance that wrote it; trimmed with
//	                  XADD MAXLEN ~ Config.StreamLen
//	PREFIX instances  sorted set: instance id -> Redis TIME (ms) of its
//	                  last beat
//	PREFIX history:D  hash per UTC day D (days since the Unix epoch):
//	                  field = server address, value = its player counts
//	                  of that day (package web's day chunk, one byte per
//	                  5-minute slot); expires when history.History stops
//	                  keeping the day (history.go)
//	PREFIX rtts       hash: landmark RTTs, one per server and landmark
//	PREFIX landmarks  hash: the live landmarks' descriptions (landmarks.go)
//	PREFIX removed    sorted set: server address -> the version (ms) of
//	                  its last removal, kept Config.RemovedTTL (15
//	                  minutes): a write of an older verification that
//	                  comes after the removal (an instance's queue,
//	                  written when Redis answers again) lists nothing
//	PREFIX epoch      string: a random id set by the first full read of
//	                  a registry (SET NX); a Redis that lost its data has
//	                  none, or another's (fullread.go)
//
// A value is its version, the server's last verification in Unix
// nanoseconds as 20 decimal digits (so that Redis compares versions as
// strings), then the record as master/store encodes it (store.Encode).
// One hash field per server means two instances that verify one server at
// once leave one record: the Lua script that writes it keeps the later
// verification and drops the other (put: write only if the version is
// newer than the one held; removal: delete only if the one held is no
// newer than the version removed, so a removal never undoes a verification
// made elsewhere meanwhile). A removal's version is the server's last
// verification, or, for a server that said it was shutting down (a
// flatline) and did not answer its check, the time of that check
// (master.Removal.Version): a shutdown the master was told about
// outweighs a re-probe another instance made before it. Each script
// writes the hash and appends to the stream in one atomic step, or does
// nothing and appends nothing.
//
// # Work shared, not repeated
//
// A heartbeat is verified by the instance that received it (the game
// server answers the address it sent to). Re-probes and the silence of
// listed servers are divided among the live instances by rendezvous
// hashing of the server's address, rotated by its round (the period of
// the server's re-probe grid its last verification fell in, which every
// instance computes alike from the shared record; master.Rendezvous,
// master.Round): each server is re-probed once per period by the fleet,
// at the points of its grid, and by every live instance within len(live)
// periods (a re-probe answered a whole interval late skips one), so that
// each instance, a landmark placed
// where it runs, measures its RTT to every server. An instance beats every
// Config.Beat (ZADD with Redis's own clock, so hosts' clocks do not
// matter) and is live while its last beat is within Config.Dead; a stopped
// instance leaves at once (ZREM). An instance takes others for dead only
// once it has beaten for Config.Dead itself since Redis last failed it,
// its own previous beat within Config.Dead: after a Redis stall or outage
// of Config.Dead or more, no instance's beat is recent, and none is dead
// for it. When an instance dies its servers are
// the others' after Config.Dead, and each is re-probed by its new owner
// within master.DefaultShareRecheck of the time it was due: well within
// one re-probe period. The owner decides a silent server's expiry and
// writes its removal once; the others learn it from the stream.
//
// # Redis operations
//
//   - a heartbeat: none (the challenge and the check are in memory);
//   - a verification that lists, updates or refreshes a server (a
//     heartbeat's check or a re-probe): one EVALSHA (HGET, HSET, XADD in
//     the script), pipelined with the other writes queued at that moment;
//     at each other instance, its share of an XREAD that returns up to
//     Config.ReadCount changes and of the GET of the epoch and XINFO
//     STREAM pipelined after it (a read that got changes checks that none
//     after its start was trimmed away first, XREAD skips those without a
//     word, and that Redis kept the registry);
//   - a re-probe: none to send it; its verification is the line above; an
//     unanswered one that drops the server, one EVALSHA (TIME, ZSCORE,
//     ZADD, ZREMRANGEBYSCORE, HGET, HDEL, XADD); a put of a server the
//     hash does not hold also reads its removal (ZSCORE);
//   - per instance, every Config.Beat: one EVALSHA (TIME, ZSCORE, ZADD,
//     ZRANGE, HMGET, GET of the epoch; ZRANGEBYSCORE once it has beaten for Config.Dead
//     since Redis last failed it; HSET of its description when it is a
//     landmark; ZREM and HDEL when an instance died), and a blocking
//     XREAD always waiting;
//   - per instance, every masterd.FleetHistoryInterval with history
//     changed: one EVALSHA per day touched and per HistoryBatch servers,
//     in pipelines of up to HistoryCallsPerTrip calls, writing the
//     changed days of its own share only
//     (an HGET and an HSET per server and day, one EXPIREAT per day);
//     every instance records every server's samples, so a server's new
//     owner writes its day with the next sample; the samples of the
//     records read at start are not written again. At start, one HSCAN
//     page per PageSize servers and day kept.
//   - a catch-up (after Redis failed, or behind by a whole XREAD): a GET
//     of the epoch and an XINFO STREAM; a full read of the hash also
//     INFO server and SET NX and GET of the epoch.
//   - with landmarks (landmarks.go): no more round trips; a landmark's
//     verification's script does one more HSET (its RTT), and a
//     removal's one HDEL per landmark.
//
// TestFleet_RedisOpsPerEvent counts them with INFO commandstats.
//
// # Faults
//
// Writes are queued and coalesced per address (the latest state of each
// address, as the state file's writer does), so the queue holds at most
// one write per server; it is bounded by Config.MaxQueued (by default
// QueuedPerServer × the registry's MaxServers), beyond which a
// new address's write is dropped and counted (the server's next
// verification writes it again). When Redis is unreachable every instance
// goes on answering from memory, verifying heartbeats and re-probing its
// last known share; it logs "redis unreachable" once, sets
// scout_fleet_redis_up to 0, retries with a backoff from MinBackoff to
// MaxBackoff, and when Redis answers again writes its queue and catches
// up: it reads the stream from the last change it applied, or, when the
// stream was trimmed past it (XINFO STREAM: its first entry is after that change) or
// started again, reads the whole hash in pages of Config.PageSize (HSCAN)
// and drops the servers it lists that the hash no longer holds, but not
// its own: those verified since the read began, and those whose writes
// were queued, in flight when the read began, or taken from the queue
// while it ran (the read may have passed their place in the hash before
// they landed), unless Redis refused them (a newer record or a removal);
// each server dropped is logged at debug level. An instance cut off from
// Redis for the fleet's dead time reports itself alone
// (scout_fleet_instances 1), as the others report it gone. Startup
// reads the hash in the same pages, then the stream from where it stood
// before the read. A read of the hash cut short (a join given up at
// masterd.FleetJoinTimeout, a round trip timing out while Redis is busy)
// goes on from the last page applied at the next attempt, as long as the
// same Redis process answers and the stream still holds every change
// since the read began (scout_fleet_resyncs_resumed_total); so a registry
// that takes longer to read than Redis stays responsive is still read
// whole. A restart of Redis with its append-only file loses
// nothing. A Redis that comes back without the registry (started again
// without its data, or flushed: its stream is older than the last change
// applied, or gone, or the registry's epoch is not the one the instance
// read, which tells it even when another instance has already written
// to the new stream; a flush under an instance whose XREAD goes on
// blocking, which no error tells, its next beat finds by the epoch) is
// not taken as the fleet emptied: every instance
// keeps its list, says so ("redis lost the shared registry",
// scout_fleet_registry_lost_total) and writes its list to Redis again.
//
// Keys of one fleet share one Redis (not a cluster: a script touches
// several keys).
package fleet
