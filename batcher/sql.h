#ifndef EDGEALLOC_BATCHER_SQL_H_
#define EDGEALLOC_BATCHER_SQL_H_

// The statements of the heartbeat path and the container reaper, in one place
// so that what runs under the write lock can be read at a glance. Keywords in
// capitals, `?N` placeholders.

namespace batcher::sql {

// A heartbeat row is written by one of three statements, guarded at write
// time (never at enqueue time, so a claim that landed in between is seen).
// Liveness always advances: last_heartbeat_ms is the server's clock, fair to
// a container whose own clock is skewed. The report (reported_ts_ms, load,
// state) applies only if it is not older than the newest one taken (?3 NULL
// counts as current). The batcher runs kHeartbeatPlain first for every row;
// if it changed no row (sqlite3_changes() == 0) and the row carries a state,
// kHeartbeatReport; if that changed none either, kHeartbeatStale writes the
// liveness alone, and if that changes no row the id is not in this shard.
//
// Why three statements and no RETURNING (issue #5, measured with callgrind):
// - SQLite rewrites a row's entry in every index whose columns or partial
//   WHERE mention a column the SET names, whether or not the value changes.
//   kHeartbeatReport names status, so it moves the row in
//   containers_claimable, containers_counts, containers_heartbeat and
//   containers_dead_reported; kHeartbeatPlain moves it in
//   containers_heartbeat only (half the pages and CPU a row), and cannot
//   touch a claim's columns at all. It takes every heartbeat without a state
//   and every report of the state the row already has (a ready container
//   saying "ready" again, the common case), for which kHeartbeatReport would
//   change nothing but what kHeartbeatPlain changes: its WHERE says, per
//   state, when that is (the outcome of kHeartbeatReport's CASEs below).
// - RETURNING is a trigger in SQLite: each run opens an ephemeral table and,
//   with the table's CHECK constraints, a statement journal that copies
//   every page the statement touches. The stale report, which RETURNING was
//   for, is rare, so it costs a second statement only when it happens.
//   ?1 id ?2 accepted_ms ?3 ts_ms (or NULL) ?4 load (or NULL)
//   ?5 state: 'ready', 'draining', 'dead' or NULL
inline constexpr char kHeartbeatPlain[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = MAX(last_heartbeat_ms, ?2),
  reported_ts_ms = COALESCE(?3, reported_ts_ms),
  load = COALESCE(?4, load)
WHERE id = ?1 AND (?3 IS NULL OR ?3 >= reported_ts_ms) AND (
  ?5 IS NULL
  OR (?5 = 'ready' AND (status = 'available' OR status = 'picked') AND dead_reported = 0)
  OR (?5 = 'draining' AND (status = 'draining' OR (status = 'picked' AND drain_requested = 1)))
  OR (?5 = 'dead' AND (status = 'dead' OR (status = 'picked' AND dead_reported = 1))))
)sql";

// As kHeartbeatPlain, and the reported state, never into or out of 'picked'.
// In an SQLite UPDATE every SET expression sees the row as it was before the
// statement, which these CASEs rely on.
//   ready:    dead / draining -> available; on a picked row it withdraws an
//             earlier dead report (dead_reported = 0).
//   draining: available -> draining; picked stays picked, drain_requested = 1.
//   dead:     not picked -> dead; picked stays picked, dead_reported = 1, and
//             the reaper ends its session in its own transaction.
// A dead container stays dead until it reports ready (or is registered again).
//   ?1 .. ?5 as kHeartbeatPlain, ?5 not NULL
inline constexpr char kHeartbeatReport[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = MAX(last_heartbeat_ms, ?2),
  reported_ts_ms = COALESCE(?3, reported_ts_ms),
  load = COALESCE(?4, load),
  status = CASE
    WHEN ?5 = 'ready' AND status IN ('dead', 'draining') THEN 'available'
    WHEN ?5 = 'draining' AND status = 'available' THEN 'draining'
    WHEN ?5 = 'dead' AND status <> 'picked' THEN 'dead'
    ELSE status END,
  drain_requested = CASE
    WHEN ?5 = 'draining' AND status = 'picked' THEN 1
    ELSE drain_requested END,
  dead_reported = CASE
    WHEN ?5 = 'dead' AND status = 'picked' THEN 1
    WHEN ?5 = 'ready' THEN 0
    ELSE dead_reported END
WHERE id = ?1 AND (?3 IS NULL OR ?3 >= reported_ts_ms)
)sql";

// A report older than the newest taken (or an id this shard lacks, which it
// then changes nothing of): liveness only.
//   ?1 id ?2 accepted_ms
inline constexpr char kHeartbeatStale[] = R"sql(
UPDATE containers SET last_heartbeat_ms = MAX(last_heartbeat_ms, ?2) WHERE id = ?1
)sql";

// Does this shard hold the container? (Routing with several shards: a
// heartbeat carries no region.)
inline constexpr char kContainerExists[] = R"sql(
SELECT 1 FROM containers WHERE id = ?1
)sql";

// Is there anything for the reaper? Two cheap reads on a read-only
// connection before any job is queued, so an idle pool costs the writer
// nothing. The first walks the partial index containers_heartbeat.
//   ?1 cutoff_ms (now - dead_after_ms)
inline constexpr char kAnySilent[] = R"sql(
SELECT 1 FROM containers WHERE status <> 'dead' AND last_heartbeat_ms < ?1 LIMIT 1
)sql";
// A dead report left for the reaper, found through the partial index
// containers_dead_reported (only reported rows are in it). dead_reported
// is looked for on any row that is not dead, not only picked ones: a session
// released between the report and the sweep leaves it on an available row.
// The unary + keeps `status <> 'dead'` from matching containers_heartbeat's
// WHERE: without it SQLite walked that index whole, reading every row for
// dead_reported (1M row reads a reaper tick with 1M containers).
inline constexpr char kAnyDeadReported[] = R"sql(
SELECT 1 FROM containers WHERE dead_reported = 1 AND +status <> 'dead' LIMIT 1
)sql";

// The reaper, picked rows first: at most ?2 picked containers that are silent
// or reported dead become dead, and their session ends (the holder's next
// session call answers 404). Counted as sessions ended. Two index walks, as
// in kReapUnpicked below: a walk of the held rows (containers_session) read
// every held row each sweep, 135 ms in the writer with 500,000 sessions,
// and a sweep runs whenever any container anywhere is silent.
//   ?1 cutoff_ms ?2 limit
inline constexpr char kReapPicked[] = R"sql(
UPDATE containers
SET status = 'dead', session_id = NULL, tenant = NULL, idempotency_key = NULL,
    lease_expires_at_ms = NULL, claimed_at_ms = NULL, drain_requested = 0,
    dead_reported = 0
WHERE id IN (SELECT id FROM containers
             WHERE status <> 'dead' AND last_heartbeat_ms < ?1 AND status = 'picked'
             UNION ALL
             SELECT id FROM containers
             WHERE dead_reported = 1 AND +status = 'picked' AND last_heartbeat_ms >= ?1
             LIMIT ?2)
)sql";

// Then at most ?2 available or draining containers that are silent or carry a
// dead report become dead. Two index walks, not one scan (an OR of the two
// would defeat both indexes, and a sweep runs in the writer, between claims):
// the silent ones oldest first through containers_heartbeat, then the
// reported ones that are not silent through containers_dead_reported (the +
// as in kAnyDeadReported). UNION ALL stops at the LIMIT.
//   ?1 cutoff_ms ?2 limit
inline constexpr char kReapUnpicked[] = R"sql(
UPDATE containers
SET status = 'dead', drain_requested = 0, dead_reported = 0
WHERE id IN (SELECT id FROM containers
             WHERE status <> 'dead' AND last_heartbeat_ms < ?1
               AND status IN ('available', 'draining')
             UNION ALL
             SELECT id FROM containers
             WHERE dead_reported = 1 AND +status IN ('available', 'draining')
               AND last_heartbeat_ms >= ?1
             LIMIT ?2)
)sql";

}  // namespace batcher::sql

#endif  // EDGEALLOC_BATCHER_SQL_H_
