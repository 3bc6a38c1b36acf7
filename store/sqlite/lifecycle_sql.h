#ifndef EDGEALLOC_STORE_SQLITE_LIFECYCLE_SQL_H_
#define EDGEALLOC_STORE_SQLITE_LIFECYCLE_SQL_H_

#include "store/row_columns.h"
#include "store/sql_text.h"

// Every statement of the container and session lifecycle (docs/design.md's
// state machine) in one place, but for the heartbeat rows' three
// (heartbeat_sql.h), so that what runs under the write lock can be read at a
// glance and each transition is written once. Keywords in
// capitals, `?N` placeholders. A statement that returns a session or a
// container returns the row store/row_columns.h describes
// (kSessionColumnList, kContainerColumnList), first, and ReadSessionRow or
// ReadContainerRow (sqlite/rows.h) reads it.

// How a session ends, in SET-clause fragments shared by every statement that
// ends one (release, lease expiry, death), spliced in by string-literal
// concatenation so each is written once.
// The status a container returns to when its session ends normally: dead if
// it reported itself dead meanwhile, draining if an operator drained it or it
// reported itself draining, else available. Both drains outlive the session.
#define EDGEALLOC_SQL_STATUS_AFTER_SESSION                                             \
  "status = CASE WHEN dead_reported THEN 'dead' "                                      \
  "WHEN drain_requested OR drain_reported THEN 'draining' ELSE 'available' END"
// Forgets the session and the requests that waited for its end.
#define EDGEALLOC_SQL_FORGET_SESSION                                                     \
  "dead_reported = 0, session_id = NULL, tenant = NULL, "                               \
  "idempotency_key = NULL, lease_expires_at_ms = NULL, claimed_at_ms = NULL, labels = NULL"
// Ends the session saying why (`reason`, an SQL expression): setting
// end_reason is what makes the trigger of store/sqlite/schema.cc (version 8)
// keep the session in session_history, so no sweep can end a session without
// a reason. A claim or renew never sets end_reason, so the trigger costs them
// nothing; nor does a release, which keeps its history row itself (kRelease).
#define EDGEALLOC_SQL_END_SESSION(reason) "end_reason = " reason ", " EDGEALLOC_SQL_FORGET_SESSION

namespace store::sql {

// ---- Sessions: claim, renew, release, expire ----

// The claim: one statement. The candidate pool is the K healthy available
// containers of the region and pool with the lowest latency (a walk of the
// partial index containers_claimable); one of them, at random, is flipped to
// picked, its generation (the fencing token) bumped and the session stamped.
// The tenant quota is checked in the same statement, so no claim can slip
// past it. No row returned: nothing fitted, or the quota was reached.
//   ?1 region ?2 pool ?3 healthy_since_ms ?4 K ?5 session_id ?6 tenant
//   ?7 idempotency_key (or NULL) ?8 lease_expires_at_ms ?9 now_ms ?10 quota (-1: none)
//   ?11 labels (a JSON object's text, or NULL)
inline constexpr auto kClaim = Sql(R"sql(
WITH candidate_pool AS (
  SELECT id FROM containers
  WHERE region = ?1 AND pool = ?2 AND status = 'available' AND last_heartbeat_ms >= ?3
  ORDER BY latency_ms
  LIMIT ?4)
UPDATE containers
SET status = 'picked', generation = generation + 1, session_id = ?5, tenant = ?6,
    idempotency_key = ?7, lease_expires_at_ms = ?8, claimed_at_ms = ?9, labels = ?11
WHERE id = (SELECT id FROM candidate_pool ORDER BY RANDOM() LIMIT 1)
  AND (?10 < 0 OR (SELECT COUNT(*) FROM containers
                   WHERE session_id IS NOT NULL AND tenant = ?6) < ?10)
RETURNING )sql", kSessionColumnList, "\n");

// A pool as a waiting claim sees it: any container at all (the index
// containers_counts), and one a claim could take now (containers_claimable).
//   ?1 region ?2 pool ?3 healthy_since_ms
inline constexpr char kProbePool[] = R"sql(
SELECT EXISTS (SELECT 1 FROM containers WHERE region = ?1 AND pool = ?2),
       EXISTS (SELECT 1 FROM containers
               WHERE region = ?1 AND pool = ?2 AND status = 'available'
                 AND last_heartbeat_ms >= ?3)
)sql";

// How many sessions a tenant holds in this shard (to tell quota from
// no_capacity after a claim returned nothing, and for other shards' share).
inline constexpr char kCountTenantSessions[] = R"sql(
SELECT COUNT(*) FROM containers WHERE session_id IS NOT NULL AND tenant = ?1
)sql";

// The live session of a tenant's idempotency key, if any: a session whose
// lease is over is not replayed, even before the reaper has freed it.
//   ?1 tenant ?2 key ?3 now_ms
inline constexpr auto kFindIdempotent = Sql("SELECT ", kSessionColumnList, R"sql(
FROM containers
WHERE tenant = ?1 AND idempotency_key = ?2 AND session_id IS NOT NULL
  AND lease_expires_at_ms > ?3
)sql");

// An expired session still holding the key (the reaper has not run yet) lets
// go of the key, so that the unique index does not refuse the new claim. The
// container itself stays for the reaper: a claim never sweeps.
//   ?1 tenant ?2 key ?3 now_ms
inline constexpr char kForgetExpiredKey[] = R"sql(
UPDATE containers SET idempotency_key = NULL
WHERE tenant = ?1 AND idempotency_key = ?2 AND lease_expires_at_ms <= ?3
)sql";

// Release: compare-and-swap on (session_id, token), while the lease runs (an
// expired session is already over, as GET says; the reaper frees it). The
// container goes back to available; to draining if it is drained (by an
// operator, or by its own report); to dead if it reported itself dead meanwhile. Success is one
// changed row. The row is found by rowid through a subquery run once, not by
// `WHERE session_id = ?1`: an UPDATE that finds its row through an index it
// changes must first copy the keys to a temporary table, and SQLite builds
// one per execution; so would RETURNING (EXPLAIN showed both). It does not
// set end_reason, so the history trigger does not fire: a trigger made a
// release cost twice the instructions (its sub-program, a statement journal
// and a temporary table each time), and store/sqlite/release.cc writes the
// history row with kKeepEndedSession instead, in the same transaction.
//   ?1 session_id ?2 token ?3 tenant (NULL for an admin) ?4 now_ms
inline constexpr char kRelease[] = R"sql(
UPDATE containers
SET )sql" EDGEALLOC_SQL_STATUS_AFTER_SESSION ", " EDGEALLOC_SQL_FORGET_SESSION R"sql(
WHERE rowid = (SELECT rowid FROM containers WHERE session_id = ?1)
  AND generation = ?2 AND (?3 IS NULL OR tenant = ?3) AND lease_expires_at_ms > ?4
)sql";

// Renew: compare-and-swap on (session_id, token), only while the lease runs.
//   ?1 session_id ?2 token ?3 tenant (NULL for an admin) ?4 now_ms ?5 new expiry
inline constexpr auto kRenew = Sql(R"sql(
UPDATE containers
SET lease_expires_at_ms = ?5
WHERE session_id = ?1 AND generation = ?2 AND (?3 IS NULL OR tenant = ?3)
  AND lease_expires_at_ms > ?4
RETURNING )sql", kSessionColumnList, "\n");

// A session as stored; also what a failed CAS found, to tell not_found,
// forbidden and stale_token apart.
inline constexpr auto kGetSession =
    Sql("SELECT ", kSessionColumnList, " FROM containers WHERE session_id = ?1");

// Is there any expired lease? A cheap read before a sweep is queued.
inline constexpr char kAnyExpired[] = R"sql(
SELECT 1 FROM containers
WHERE session_id IS NOT NULL AND lease_expires_at_ms <= ?1 LIMIT 1
)sql";

// The lease reaper: frees at most ?2 expired sessions, oldest first, in a
// transaction of its own (never inside a claim).
inline constexpr char kReapExpired[] = R"sql(
UPDATE containers
SET )sql" EDGEALLOC_SQL_STATUS_AFTER_SESSION ", " EDGEALLOC_SQL_END_SESSION("'expired'") R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE session_id IS NOT NULL AND lease_expires_at_ms <= ?1
             ORDER BY lease_expires_at_ms LIMIT ?2)
)sql";

// A step of the wall clock (store/clock_steps.h): every stored instant a
// sweep, a claim or a report compares with now moves by the step (?1 ms),
// in one transaction, so that leases keep their length, silences their
// measure and deaths their order against later reports (a death left ahead
// of a backward step would refuse the container's reports for as long).
// The history and claim counts keep theirs (shown, and pruned by age).
inline constexpr char kShiftLeases[] = R"sql(
UPDATE containers SET lease_expires_at_ms = lease_expires_at_ms + ?1,
                      claimed_at_ms = claimed_at_ms + ?1
WHERE session_id IS NOT NULL
)sql";
inline constexpr char kShiftHeartbeats[] =
    "UPDATE containers SET last_heartbeat_ms = last_heartbeat_ms + ?1, "
    "died_at_ms = died_at_ms + ?1";

// ---- Containers: register, read, drain, delete ----

// Registration: insert, or update what may change. The holder never changes;
// region and pool only when not picked; a dead container that is not picked
// comes back (registration counts as a heartbeat), draining if it is drained
// (an operator's drain outlives death and registration). A new row starts at the
// token floor (store/sqlite/schema.cc, version 4): the highest generation of any row
// deleted from this file, or from another shard's (?7), so an id deleted and
// registered again never hands out a token it had before. A registration
// also resets the report order (reported_ts_ms = 0): the next report is
// taken whatever its ts_ms, so a container frozen by a far-future ts_ms
// (taken before --max-clock-skew-ms bounded it) is freed by registering it.
//   ?1 id ?2 region ?3 pool ?4 latency_ms ?5 data ?6 now_ms ?7 other shards' floor
inline constexpr char kUpsertContainer[] = R"sql(
INSERT INTO containers (id, region, pool, status, latency_ms, data, last_heartbeat_ms, generation)
VALUES (?1, ?2, ?3, 'available', ?4, ?5, ?6,
        MAX(COALESCE(?7, 0), (SELECT generation FROM token_floor WHERE only_row = 1)))
ON CONFLICT (id) DO UPDATE SET
  latency_ms = excluded.latency_ms,
  data = excluded.data,
  last_heartbeat_ms = MAX(last_heartbeat_ms, excluded.last_heartbeat_ms),
  reported_ts_ms = 0,
  region = CASE WHEN status = 'picked' THEN region ELSE excluded.region END,
  pool = CASE WHEN status = 'picked' THEN pool ELSE excluded.pool END,
  status = CASE WHEN status <> 'dead' THEN status
                WHEN drain_requested OR drain_reported THEN 'draining' ELSE 'available' END
)sql";

inline constexpr auto kGetContainer =
    Sql("SELECT ", kContainerColumnList, " FROM containers WHERE id = ?1");

// Does this shard hold the container? (A heartbeat carries no region, and a
// registration must not put an id into a second shard.)
inline constexpr char kContainerExists[] = R"sql(
SELECT 1 FROM containers WHERE id = ?1
)sql";

// The token floor of this file (see kUpsertContainer).
inline constexpr char kTokenFloor[] = R"sql(
SELECT generation FROM token_floor WHERE only_row = 1
)sql";

// An operator's drain: drain_requested, held until kUndrain or delete
// (no heartbeat clears it). Available becomes draining now; picked when its
// session ends; dead when it comes back. Returns the container as it is now.
inline constexpr auto kDrain = Sql(R"sql(
UPDATE containers
SET status = CASE WHEN status = 'available' THEN 'draining' ELSE status END,
    drain_requested = 1
WHERE id = ?1
RETURNING )sql", kContainerColumnList, "\n");

// Undrain ends an operator's drain: draining becomes available, unless the
// container itself reported draining (its own ready ends that).
inline constexpr auto kUndrain = Sql(R"sql(
UPDATE containers
SET status = CASE WHEN status = 'draining' AND drain_reported = 0 THEN 'available'
                  ELSE status END,
    drain_requested = 0
WHERE id = ?1
RETURNING )sql", kContainerColumnList, "\n");

inline constexpr char kRemoveUnpicked[] = R"sql(
DELETE FROM containers WHERE id = ?1 AND status <> 'picked'
)sql";

// ---- Death (the heartbeats that keep a container alive: heartbeat_sql.h) ----

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

// What both reaper statements return of each container they mark dead
// (store::DeadContainer): who, where, its last heartbeat (the node's clock)
// and whether it was silent (else it had reported itself dead). Bounded by
// the sweep's LIMIT, so the log and the counts cost no read of their own.
#define EDGEALLOC_SQL_DEATH_COLUMNS "id, region, pool, last_heartbeat_ms, last_heartbeat_ms < ?1"

// The reaper, picked rows first: at most ?2 picked containers that are silent
// or reported dead become dead, and their session ends (the holder's next
// session call answers 410 container_dead). Counted as sessions ended.
// died_at_ms = ?3, this node's now: when it was judged dead, which a late
// heartbeat's acceptance is compared with (store/report_counts_sql.h). Two
// index walks, as in kReapUnpicked below, never a walk of every held row (containers_session):
// a sweep runs in the writer whenever any container anywhere is silent.
// The pools of a mass silence (?5, a JSON array of [region, pool]) end the
// sessions of their silent containers only past the longer grace (?4).
//   ?1 cutoff_ms ?2 limit ?3 now_ms ?4 held_cutoff_ms ?5 held pools
inline constexpr char kReapPicked[] = R"sql(
UPDATE containers
SET status = 'dead', died_at_ms = ?3, )sql" EDGEALLOC_SQL_END_SESSION("'container_dead'") R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE status <> 'dead' AND last_heartbeat_ms < ?1 AND status = 'picked'
               AND (last_heartbeat_ms < ?4 OR (region, pool) NOT IN
                    (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')
                     FROM json_each(?5)))
             UNION ALL
             SELECT id FROM containers
             WHERE dead_reported = 1 AND +status = 'picked' AND last_heartbeat_ms >= ?1
             LIMIT ?2)
RETURNING )sql" EDGEALLOC_SQL_DEATH_COLUMNS;

// Silent containers by pool, through containers_heartbeat: the silent rows
// only (Storage::CountSilent).
//   ?1 cutoff_ms
inline constexpr char kCountSilent[] = R"sql(
SELECT region, pool, count(*) FROM containers
WHERE status <> 'dead' AND last_heartbeat_ms < ?1 GROUP BY region, pool
)sql";

// Then at most ?2 available or draining containers that are silent or carry a
// dead report become dead (an operator's drain stays: a container that comes
// back comes back draining). Two index walks, not one scan (an OR of the two
// would defeat both indexes, and a sweep runs in the writer, between claims):
// the silent ones oldest first through containers_heartbeat, then the
// reported ones that are not silent through containers_dead_reported (the +
// as in kAnyDeadReported). UNION ALL stops at the LIMIT. died_at_ms as above.
//   ?1 cutoff_ms ?2 limit ?3 now_ms
inline constexpr char kReapUnpicked[] = R"sql(
UPDATE containers
SET status = 'dead', dead_reported = 0, died_at_ms = ?3
WHERE id IN (SELECT id FROM containers
             WHERE status <> 'dead' AND last_heartbeat_ms < ?1
               AND status IN ('available', 'draining')
             UNION ALL
             SELECT id FROM containers
             WHERE dead_reported = 1 AND +status IN ('available', 'draining')
               AND last_heartbeat_ms >= ?1
             LIMIT ?2)
RETURNING )sql" EDGEALLOC_SQL_DEATH_COLUMNS;

// ---- Capacity ----

// The mirror's read of a shard: the containers by region, pool and status,
// and how many of them an operator drained, answered from the covering index
// containers_counts (region, pool, status, drain_requested) without the table.
inline constexpr auto kCapacityCounts =
    Sql("SELECT ", kCapacityColumnList, " FROM containers GROUP BY region, pool, status");

// Then the ids under an operator's drain, for the heartbeat reply: a walk of
// the partial index containers_drain_requested, which holds only them, so
// the read costs the drained containers, never the fleet.
inline constexpr char kDrainedIds[] = "SELECT id FROM containers WHERE drain_requested = 1";

}  // namespace store::sql

#undef EDGEALLOC_SQL_STATUS_AFTER_SESSION
#undef EDGEALLOC_SQL_END_SESSION
#undef EDGEALLOC_SQL_FORGET_SESSION

#endif  // EDGEALLOC_STORE_SQLITE_LIFECYCLE_SQL_H_
