#ifndef EDGEALLOC_STORE_POSTGRES_HEARTBEAT_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_HEARTBEAT_SQL_H_

// The PostgreSQL statements of heartbeat batches
// (store/postgres/postgres_storage_heartbeats.cc).

#include "store/postgres/lifecycle_sql.h"
#include "store/report_counts_sql.h"

// A row's acceptance on the database's clock: the node's accept time plus
// the node's measured offset from the database and that measure's error
// (WriterStats::clock_offset_ms, clock_offset_error_ms: the latest it may
// have been, store/postgres/postgres_storage_heartbeats.cc), never later than
// the write itself (an offset gone stale by a step of the node's clock must not
// date a report in the future: it would keep a dead container claimable).
#define EDGEALLOC_PG_ACCEPTED(param) "LEAST(" param "::bigint, " EDGEALLOC_PG_NOW_MS ")"

namespace store::pgsql {

// Heartbeats: the three statements of store/sqlite/heartbeat_sql.h. The
// liveness stamp (last_heartbeat_ms) is when the row was accepted, on the
// database's clock (EDGEALLOC_PG_ACCEPTED), not when it is written: a
// report queued on a node counts as of when the node heard it, and silence
// is judged on the database's clock. A row accepted before the container
// was judged dead changes nothing (store/report_counts_sql.h).
//   $1 id $2 ts_ms (or NULL) $3 load (or NULL) $4 state (or NULL)
//   $5 accepted_ms, on the database's clock
inline constexpr char kHeartbeatPlain[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = GREATEST(last_heartbeat_ms, )sql" EDGEALLOC_PG_ACCEPTED("$5") R"sql(),
  reported_ts_ms = COALESCE($2::bigint, reported_ts_ms),
  load = COALESCE($3::double precision, load)
WHERE id = $1 AND ($2::bigint IS NULL OR $2::bigint >= reported_ts_ms) AND (
  $4::text IS NULL
  OR ($4 = 'ready' AND NOT dead_reported AND NOT drain_reported
      AND (status = 'available' OR status = 'picked'
           OR (status = 'draining' AND drain_requested)))
  OR ($4 = 'draining' AND drain_reported AND status <> 'available')
  OR ($4 = 'dead' AND (status = 'dead' OR (slots_used > 0 AND dead_reported))))
  AND )sql" EDGEALLOC_SQL_REPORT_COUNTS(EDGEALLOC_PG_ACCEPTED("$5")) R"sql(
)sql";

inline constexpr char kHeartbeatReport[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = GREATEST(last_heartbeat_ms, )sql" EDGEALLOC_PG_ACCEPTED("$5") R"sql(),
  reported_ts_ms = COALESCE($2::bigint, reported_ts_ms),
  load = COALESCE($3::double precision, load),
  status = CASE
    WHEN $4 = 'ready' AND status IN ('dead', 'draining')
      THEN CASE WHEN drain_requested THEN 'draining' ELSE 'available' END
    WHEN $4 = 'draining' AND status = 'available' THEN 'draining'
    WHEN $4 = 'dead' AND slots_used = 0 THEN 'dead'
    WHEN $4 = 'dead' AND status = 'available' THEN 'draining'
    ELSE status END,
  drain_reported = CASE WHEN $4 = 'draining' THEN true
                        WHEN $4 = 'ready' THEN false
                        ELSE drain_reported END,
  dead_reported = CASE WHEN $4 = 'dead' AND slots_used > 0 THEN true
                       WHEN $4 = 'ready' THEN false
                       ELSE dead_reported END
WHERE id = $1 AND ($2::bigint IS NULL OR $2::bigint >= reported_ts_ms)
  AND )sql" EDGEALLOC_SQL_REPORT_COUNTS(EDGEALLOC_PG_ACCEPTED("$5")) R"sql(
)sql";

// The heartbeats of many containers, each at most once, in one statement
// (a batch's common case): liveness advances; the report (ts_ms, load)
// applies if it is not older than the stored one; a row whose reported
// state is already the container's (kHeartbeatPlain's test), or whose
// report is older than the stored one, needs nothing else. A HOT update: no
// column it sets is in an index. Returns each row it took, stale when its
// ts_ms was older (the stored one is then still above it); a row it did not
// return is a state change or an unknown id, for the statements below.
//   $1 ids $2 ts_ms $3 loads $4 states (NULL elements allowed)
//   $5 accepted_ms, on the database's clock
inline constexpr char kHeartbeatBulk[] = R"sql(
UPDATE containers c SET
  last_heartbeat_ms = GREATEST(c.last_heartbeat_ms, u.accepted),
  reported_ts_ms = CASE WHEN u.ts_ms IS NOT NULL AND u.ts_ms >= c.reported_ts_ms
                        THEN u.ts_ms ELSE c.reported_ts_ms END,
  load = CASE WHEN u.ts_ms IS NULL OR u.ts_ms >= c.reported_ts_ms
              THEN COALESCE(u.load, c.load) ELSE c.load END
FROM (SELECT id, ts_ms, load, state, )sql" EDGEALLOC_PG_ACCEPTED("a") R"sql( AS accepted
      FROM unnest($1::text[], $2::bigint[], $3::double precision[], $4::text[], $5::bigint[])
           AS r(id, ts_ms, load, state, a)) AS u
WHERE c.id = u.id AND )sql" EDGEALLOC_SQL_REPORT_COUNTS("u.accepted") R"sql( AND (
  u.state IS NULL
  OR (u.ts_ms IS NOT NULL AND u.ts_ms < c.reported_ts_ms)
  OR (u.state = 'ready' AND NOT c.dead_reported AND NOT c.drain_reported
      AND (c.status = 'available' OR c.status = 'picked'
           OR (c.status = 'draining' AND c.drain_requested)))
  OR (u.state = 'draining' AND c.drain_reported AND c.status <> 'available')
  OR (u.state = 'dead' AND (c.status = 'dead' OR (c.slots_used > 0 AND c.dead_reported))))
RETURNING c.id, u.ts_ms IS NOT NULL AND c.reported_ts_ms > u.ts_ms
)sql";

// Locks the rows of the ids $1 (text[]) that no other transaction holds,
// never waiting (SKIP LOCKED), and returns every id that exists with
// whether it is now held: a heartbeat batch writes the rows it holds and
// leaves the others for a later batch, so one row an outside transaction
// keeps locked never stalls the lane (waited for, it failed the whole batch
// after lock_timeout, again and again while the lock was kept). Never
// waiting, it needs no place in the group's lock order. And each id's
// region, which the batcher counts its heartbeats' lag in (read anyway).
inline constexpr char kLockHeartbeatRows[] = R"sql(
WITH held AS MATERIALIZED (
  SELECT id FROM containers WHERE id = ANY($1::text[]) FOR UPDATE SKIP LOCKED)
SELECT c.id, c.id IN (SELECT id FROM held), c.region
FROM containers c WHERE c.id = ANY($1::text[])
)sql";

// Liveness alone (store/sqlite/heartbeat_sql.h kHeartbeatStale).
//   $1 id $2 accepted_ms, on the database's clock
inline constexpr char kHeartbeatStale[] = R"sql(
UPDATE containers SET last_heartbeat_ms =
  CASE WHEN )sql" EDGEALLOC_SQL_REPORT_COUNTS(EDGEALLOC_PG_ACCEPTED("$2")) R"sql(
       THEN GREATEST(last_heartbeat_ms, )sql" EDGEALLOC_PG_ACCEPTED("$2") R"sql()
       ELSE last_heartbeat_ms END
WHERE id = $1
)sql";

}  // namespace store::pgsql

#undef EDGEALLOC_PG_ACCEPTED

#endif  // EDGEALLOC_STORE_POSTGRES_HEARTBEAT_SQL_H_
