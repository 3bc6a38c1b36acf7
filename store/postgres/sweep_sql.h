#ifndef EDGEALLOC_STORE_POSTGRES_SWEEP_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_SWEEP_SQL_H_

// The PostgreSQL statements of the reapers' sweeps
// (store/postgres/postgres_storage_sweeps.cc).

#include "store/postgres/lifecycle_sql.h"
#include "store/row_columns.h"
#include "store/sql_text.h"

namespace store::pgsql {

// The lease reaper: at most $1 expired sessions, oldest first (never one
// another node is sweeping), deleted, kept in session_history (reason
// expired, ended at the lease's end) and their slots given back, in one
// statement (the history first, as kRelease's: its session.ended before a
// container.dead): each container's row is written once, from its own columns,
// so a claim or release of another of its slots meanwhile is kept. Returns
// how many sessions it ended.
//   $1 limit
inline constexpr auto kReapExpired = Sql(R"sql(
WITH expired AS (
  DELETE FROM sessions
  WHERE session_id IN (SELECT session_id FROM sessions
                       WHERE lease_expires_at_ms <= )sql" EDGEALLOC_PG_NOW_MS R"sql(
                       ORDER BY lease_expires_at_ms LIMIT $1::bigint
                       FOR UPDATE SKIP LOCKED)
  RETURNING *),
kept AS (
  INSERT INTO session_history ()sql", kSessionColumnList, R"sql(, end_reason, ended_at_ms)
  SELECT c.id, c.region, c.pool, e.generation, e.lease_expires_at_ms, c.data, e.labels, e.tenant,
         e.session_id, e.slot, 'expired', e.lease_expires_at_ms
  FROM expired e JOIN containers c ON c.id = e.container_id
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id),
freed AS (
  SELECT container_id, count(*) AS n, array_agg(slot) AS slots FROM expired GROUP BY container_id),
given_back AS (
UPDATE containers c
SET status = )sql" EDGEALLOC_PG_STATUS_HOLDING("c.", "c.slots_used - f.n", "c.slots") R"sql(,
    dead_reported = c.dead_reported AND c.slots_used > f.n,
    died_at_ms = CASE WHEN c.dead_reported AND c.slots_used = f.n THEN )sql" EDGEALLOC_PG_NOW_MS R"sql(
                      ELSE c.died_at_ms END,
    slots_used = c.slots_used - f.n,
    slot_map = (SELECT string_agg(CASE WHEN i - 1 = ANY(f.slots) THEN '0'
                                       ELSE substr(c.slot_map, i, 1) END, '' ORDER BY i)
                FROM generate_series(1, length(c.slot_map)) AS i)
FROM freed f
WHERE c.id = f.container_id AND (SELECT count(*) FROM kept) >= 0
RETURNING c.id)
SELECT count(*) FROM expired
)sql");

// What both reaper statements return of each container they mark dead
// (store::DeadContainer): who, where, how long it was silent by the
// database's clock, and whether it was silent (else it had reported itself
// dead). Bounded by the sweep's LIMIT: no read of their own.
#define EDGEALLOC_PG_DEATH_COLUMNS                                                  \
  "id, region, pool, " EDGEALLOC_PG_NOW_MS " - last_heartbeat_ms, "                 \
  "last_heartbeat_ms < " EDGEALLOC_PG_NOW_MS " - $1::bigint"

// The instant before which a stored heartbeat is silent, on the database's
// clock: `silence` ms before its now (this node's dead_after_ms and lag),
// and no later than `dead_after` ms before the least "heard until" that the
// other nodes (not `node`) published for the lanes `lanes_match` picks
// within the last `dead_after` ms (schema_sql.h kNodeHeardUntil): a report
// another node accepted and is still writing is heard, as this node's own.
// A node silent for longer is not waited for. One subquery, read once.
#define EDGEALLOC_PG_SILENT_BEFORE(silence, node, dead_after, lanes_match)                  \
  "least(" EDGEALLOC_PG_NOW_MS " - " silence "::bigint, "                                   \
  "(SELECT min(heard_until_ms) FROM node_heard_until WHERE node_id <> " node "::text "      \
  "AND updated_ms >= " EDGEALLOC_PG_NOW_MS " - " dead_after "::bigint AND " lanes_match ") " \
  "- " dead_after "::bigint)"
// A node with this node's count of lanes holds the swept lane alone; one
// with another count, every lane of its.
#define EDGEALLOC_PG_SWEPT_LANE "(lanes <> $3::integer OR lane = $4::integer)"

// The dead-container sweep of one heartbeat partition: lane_hash % $3 = $4.
// Silent: a stored heartbeat before EDGEALLOC_PG_SILENT_BEFORE ($1 ms before
// the database's now, at most; $8 this node, $9 dead_after_ms).
// died_at_ms: the database's now, when it was judged dead, which a late
// heartbeat's acceptance is compared with (store/report_counts_sql.h).
// The pools of a mass silence ($6 regions, $7 pools) end the sessions of
// their silent containers only past the longer grace ($5 ms).
//   $1 silence_ms $2 limit $3 partitions $4 partition $5 held_silence_ms
//   $6 held regions $7 held pools $8 node $9 dead_after_ms
inline constexpr char kReapPicked[] = R"sql(
UPDATE containers
SET status = 'dead', died_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql(, slot_taken = slots_used,
    )sql" EDGEALLOC_PG_END_SESSIONS("'container_dead'") R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE slots_used > 0
               AND ((last_heartbeat_ms < )sql" EDGEALLOC_PG_SILENT_BEFORE("$1", "$8", "$9", EDGEALLOC_PG_SWEPT_LANE) R"sql(
                     AND (last_heartbeat_ms < )sql" EDGEALLOC_PG_NOW_MS R"sql( - $5::bigint
                          OR (region, pool) NOT IN (SELECT * FROM unnest($6::text[], $7::text[]))))
                    OR dead_reported)
               AND lane_hash % $3::integer = $4::integer
             LIMIT $2::bigint
             FOR UPDATE SKIP LOCKED)
RETURNING )sql" EDGEALLOC_PG_DEATH_COLUMNS R"sql(, slot_taken
)sql";

// Silent containers by pool, every partition (Storage::CountSilent), held
// by every lane the other nodes published.
//   $1 silence_ms $2 node $3 dead_after_ms
inline constexpr char kCountSilent[] = R"sql(
SELECT region, pool, count(*) FROM containers
WHERE status <> 'dead' AND last_heartbeat_ms < )sql" EDGEALLOC_PG_SILENT_BEFORE("$1", "$2", "$3", "true") R"sql(
GROUP BY region, pool
)sql";

//   $1 silence_ms $2 limit $3 partitions $4 partition $5 node $6 dead_after_ms
inline constexpr char kReapUnpicked[] = R"sql(
UPDATE containers
SET status = 'dead', dead_reported = false, died_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE status IN ('available', 'draining') AND slots_used = 0
               AND (last_heartbeat_ms < )sql" EDGEALLOC_PG_SILENT_BEFORE("$1", "$5", "$6", EDGEALLOC_PG_SWEPT_LANE) R"sql( OR dead_reported)
               AND lane_hash % $3::integer = $4::integer
             LIMIT $2::bigint
             FOR UPDATE SKIP LOCKED)
RETURNING )sql" EDGEALLOC_PG_DEATH_COLUMNS;

// A node's "heard until" of each of its lanes (Storage::PublishHeardUntil;
// schema_sql.h kNodeHeardUntil), stamped with the database's clock.
//   $1 node $2 lanes (its count) $3 lane numbers $4 heard_until_ms (arrays)
inline constexpr char kPublishHeardUntil[] =
    "INSERT INTO node_heard_until (node_id, lane, lanes, heard_until_ms, updated_ms) "
    "SELECT $1, u.lane, $2::integer, u.heard, " EDGEALLOC_PG_NOW_MS " "
    "FROM unnest($3::integer[], $4::bigint[]) AS u(lane, heard) "
    "ON CONFLICT (node_id, lane) DO UPDATE SET lanes = excluded.lanes, "
    "heard_until_ms = excluded.heard_until_ms, updated_ms = excluded.updated_ms";
// $1 silent for longer than this (ms), $2 at most this many rows.
inline constexpr char kPruneHeardUntil[] =
    "DELETE FROM node_heard_until WHERE ctid = ANY (ARRAY(SELECT ctid FROM node_heard_until "
    "WHERE updated_ms < " EDGEALLOC_PG_NOW_MS " - $1::bigint LIMIT $2::bigint))";

// The session history's prune (Storage::PruneSessionHistory): of the $3
// oldest rows by insertion (a range of the primary key, seq: rows go in as
// they end, so this is the oldest first), those that ended more than $1 ms
// before the database's now; then at most $3 less those past the newest $2
// by insertion order. Returns how many went.
//   $1 history_ms $2 rows kept at most $3 limit
inline constexpr char kPruneHistory[] = R"sql(
WITH old AS (
  DELETE FROM session_history
  WHERE seq < (SELECT min(seq) FROM session_history) + $3::bigint
    AND ended_at_ms < )sql" EDGEALLOC_PG_NOW_MS R"sql( - $1::bigint
  RETURNING seq),
over AS (
  DELETE FROM session_history
  WHERE seq IN (SELECT seq FROM session_history
                WHERE seq <= (SELECT max(seq) FROM session_history) - $2::bigint
                  AND seq NOT IN (SELECT seq FROM old)
                ORDER BY seq LIMIT greatest($3::bigint - (SELECT count(*) FROM old), 0))
  RETURNING seq)
SELECT (SELECT count(*) FROM old) + (SELECT count(*) FROM over)
)sql";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_SWEEP_SQL_H_
