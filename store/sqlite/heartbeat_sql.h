#ifndef EDGEALLOC_STORE_SQLITE_HEARTBEAT_SQL_H_
#define EDGEALLOC_STORE_SQLITE_HEARTBEAT_SQL_H_

#include "store/report_counts_sql.h"

// The three statements that write a heartbeat row, as lifecycle_sql.h
// writes the rest of a container's lifecycle (the silence and death they
// keep away is there). Keywords in capitals, `?N` placeholders.

namespace store::sql {

// A heartbeat row is written by one of three statements, guarded at write
// time (never at enqueue time, so a claim that landed in between is seen).
// Liveness advances: last_heartbeat_ms is the server's clock at accept, fair
// to a container whose own clock is skewed; a row accepted before the
// container was judged dead changes nothing (store/report_counts_sql.h).
// The report (reported_ts_ms, load, state) applies only if it is not older
// than the newest one taken (?3 NULL counts as current). WriteHeartbeats
// (sqlite/sqlite_storage_heartbeats.cc) runs kHeartbeatPlain first for every
// row; if it changed no row (sqlite3_changes() == 0) and the row carries a
// state, kHeartbeatReport; if that changed none either, kHeartbeatStale
// writes the liveness alone, and if that changes no row the id is not in
// this shard.
//
// Three statements, and no RETURNING, because kHeartbeatPlain rewrites one
// index entry where kHeartbeatReport rewrites four, and RETURNING costs a
// statement journal each run (docs/performance.md, "The heartbeat
// statements"). kHeartbeatPlain takes every heartbeat without a state and
// every report of the state the row already has (its WHERE says, per state,
// when that is: the outcome of kHeartbeatReport's CASEs below), so the
// `ready` reports of a container an operator drained stay on it too.
//   ?1 id ?2 accepted_ms ?3 ts_ms (or NULL) ?4 load (or NULL)
//   ?5 state: 'ready', 'draining', 'dead' or NULL
inline constexpr char kHeartbeatPlain[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = MAX(last_heartbeat_ms, ?2),
  reported_ts_ms = COALESCE(?3, reported_ts_ms),
  load = COALESCE(?4, load)
WHERE id = ?1 AND (?3 IS NULL OR ?3 >= reported_ts_ms) AND (
  ?5 IS NULL
  OR (?5 = 'ready' AND dead_reported = 0 AND drain_reported = 0
      AND (status = 'available' OR status = 'picked'
           OR (status = 'draining' AND drain_requested = 1)))
  OR (?5 = 'draining' AND drain_reported = 1 AND status <> 'available')
  OR (?5 = 'dead' AND (status = 'dead' OR (slots_used > 0 AND dead_reported = 1))))
  AND )sql" EDGEALLOC_SQL_REPORT_COUNTS("?2") R"sql(
)sql";

// As kHeartbeatPlain, and the reported state, never into or out of 'picked'
// (every slot used), and never changing the sessions or slots a claim wrote.
// In an SQLite UPDATE every SET expression sees the row as it was before the
// statement, which these CASEs rely on.
//   ready:    dead / draining -> available, or draining while an operator's
//             drain holds (drain_requested, which no report changes); it
//             withdraws the container's own drain (drain_reported = 0) and,
//             on a picked row, an earlier dead report (dead_reported = 0).
//   draining: available -> draining; picked stays picked; drain_reported = 1
//             (the status it returns to when its session ends).
//   dead:     holding no session -> dead; holding sessions, dead_reported = 1
//             (available -> draining: no claim takes a slot of it), and the
//             reaper ends its sessions in its own transaction.
// A dead container stays dead until it reports ready (or is registered again).
//   ?1 .. ?5 as kHeartbeatPlain, ?5 not NULL
inline constexpr char kHeartbeatReport[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = MAX(last_heartbeat_ms, ?2),
  reported_ts_ms = COALESCE(?3, reported_ts_ms),
  load = COALESCE(?4, load),
  status = CASE
    WHEN ?5 = 'ready' AND status IN ('dead', 'draining')
      THEN CASE WHEN drain_requested THEN 'draining' ELSE 'available' END
    WHEN ?5 = 'draining' AND status = 'available' THEN 'draining'
    WHEN ?5 = 'dead' AND slots_used = 0 THEN 'dead'
    WHEN ?5 = 'dead' AND status = 'available' THEN 'draining'
    ELSE status END,
  drain_reported = CASE
    WHEN ?5 = 'draining' THEN 1
    WHEN ?5 = 'ready' THEN 0
    ELSE drain_reported END,
  dead_reported = CASE
    WHEN ?5 = 'dead' AND slots_used > 0 THEN 1
    WHEN ?5 = 'ready' THEN 0
    ELSE dead_reported END
WHERE id = ?1 AND (?3 IS NULL OR ?3 >= reported_ts_ms)
  AND )sql" EDGEALLOC_SQL_REPORT_COUNTS("?2") R"sql(
)sql";

// A report older than the newest taken (or an id this shard lacks, which it
// then changes nothing of): liveness only; nothing at all if it was
// accepted before the container was judged dead (store/report_counts_sql.h),
// yet the row is still found, so it is counted stale and not unknown.
//   ?1 id ?2 accepted_ms
inline constexpr char kHeartbeatStale[] = R"sql(
UPDATE containers SET last_heartbeat_ms =
  CASE WHEN )sql" EDGEALLOC_SQL_REPORT_COUNTS("?2") R"sql( THEN MAX(last_heartbeat_ms, ?2)
       ELSE last_heartbeat_ms END
WHERE id = ?1
)sql";

// A container's region, for a row whose writer does not know it
// (HeartbeatRow::learn_region): the batcher counts its heartbeats' lag there.
// A primary-key lookup, once a container a generation (batcher/region_cache.h).
inline constexpr char kHeartbeatRegion[] = R"sql(
SELECT region FROM containers WHERE id = ?1
)sql";

}  // namespace store::sql

#endif  // EDGEALLOC_STORE_SQLITE_HEARTBEAT_SQL_H_
