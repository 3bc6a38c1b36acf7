#ifndef EDGEALLOC_STORE_SQLITE_LIFECYCLE_SQL_H_
#define EDGEALLOC_STORE_SQLITE_LIFECYCLE_SQL_H_

#include "store/row_columns.h"
#include "store/sql_text.h"
#include "store/sqlite/claim_sql.h"
#include "store/sqlite/selector_sql.h"

// Every statement of the container and session lifecycle (docs/design.md's
// state machine) in one place, but for the heartbeat rows' three
// (heartbeat_sql.h), so that what runs under the write lock can be read at a
// glance and each transition is written once. Keywords in
// capitals, `?N` placeholders. A statement that returns a session or a
// container returns the row store/row_columns.h describes
// (kSessionColumnList, kContainerColumnList), first, and ReadSessionRow or
// ReadContainerRow (sqlite/rows.h) reads it.

// The status of a container that is not dead and holds `used` sessions of
// `slots` (SQL expressions of the row as it was): picked when every slot is
// used; dead once its last session ends if it reported itself dead; draining
// while an operator drained it, it reported itself draining, or it reported
// itself dead and still holds sessions (no claim may take a slot of it);
// else available. Both drains outlive sessions. Written once, for every
// statement that changes how many sessions a container holds.
#define EDGEALLOC_SQL_STATUS_HOLDING(used, slots)                                       \
  "CASE WHEN " used " >= " slots " THEN 'picked' "                                      \
  "WHEN dead_reported AND " used " = 0 THEN 'dead' "                                    \
  "WHEN drain_requested OR drain_reported OR dead_reported THEN 'draining' "            \
  "ELSE 'available' END"
// Ends every session of the container saying why (`reason`, an SQL
// expression): setting end_reason with slots_used = 0 is what makes the
// trigger of store/sqlite/schema.cc (version 12) keep its sessions in
// session_history and delete them, in the same statement, so no sweep can end
// a session without a reason. A claim, renew or heartbeat never sets
// end_reason, so the trigger costs them nothing; a session ending alone
// (release, expiry) is written by store/sqlite/release.cc.
#define EDGEALLOC_SQL_END_SESSIONS(reason)                                              \
  "end_reason = " reason ", dead_reported = 0, slots_used = 0, "                        \
  "slot_map = replace(slot_map, '1', '0')"
// `n` free slots, as slot_map writes them.
#define EDGEALLOC_SQL_FREE_SLOTS(n) "replace(hex(zeroblob(" n ")), '00', '0')"

namespace store::sql {

// ---- Sessions: claim, renew, release, expire ----

// The claim statements (kClaimFittest and its neighbours) and the session
// row a claim writes are in store/sqlite/claim_sql.h.

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
SELECT COUNT(*) FROM sessions WHERE tenant = ?1
)sql";

// The live session of a tenant's idempotency key, if any: a session whose
// lease is over is not replayed, even before the reaper has freed it.
//   ?1 tenant ?2 key ?3 now_ms
inline constexpr auto kFindIdempotent = Sql("SELECT ", kSessionColumnList, R"sql(
FROM session_rows
WHERE tenant = ?1 AND idempotency_key = ?2 AND lease_expires_at_ms > ?3
)sql");

// An expired session still holding the key (the reaper has not run yet) lets
// go of the key, so that the claim is not refused for it. The session itself
// stays for the reaper: a claim never sweeps.
//   ?1 tenant ?2 key ?3 now_ms
inline constexpr char kForgetExpiredKey[] = R"sql(
UPDATE sessions SET idempotency_key = NULL
WHERE tenant = ?1 AND idempotency_key = ?2 AND lease_expires_at_ms <= ?3
)sql";

// Release: compare-and-swap on (session_id, token), while the lease runs (an
// expired session is already over, as GET says; the reaper frees it).
// Success is one deleted row; store/sqlite/release.cc then frees its slot
// (kFreeSlot) and keeps its history row (kKeepEndedSession), in the same
// transaction.
//   ?1 session_id ?2 token ?3 tenant (NULL for an admin) ?4 now_ms
inline constexpr char kRelease[] = R"sql(
DELETE FROM sessions
WHERE session_id = ?1 AND generation = ?2 AND (?3 IS NULL OR tenant = ?3)
  AND lease_expires_at_ms > ?4
)sql";

// A session ended alone (released, expired) gives its slot back. The
// container goes back to available; to draining if it is drained (by an
// operator, or by its own report) (EDGEALLOC_SQL_STATUS_HOLDING). Never on
// a dead row: a dead container holds no session. Not the last session of a
// container that reported itself dead, which kFreeLastSlotOfDead frees: so
// this statement, one of every release, writes no column an event trigger
// watches (store/sqlite/events_sql.h, version 16).
//   ?1 container id ?2 slot
inline constexpr char kFreeSlot[] = R"sql(
UPDATE containers
SET status = )sql" EDGEALLOC_SQL_STATUS_HOLDING("slots_used - 1", "slots") R"sql(,
    slots_used = slots_used - 1,
    slot_map = substr(slot_map, 1, ?2) || '0' || substr(slot_map, ?2 + 2)
WHERE id = ?1 AND substr(slot_map, ?2 + 1, 1) = '1' AND NOT (dead_reported AND slots_used = 1)
)sql";

// The last session of a container that reported itself dead ended: the
// container is dead from now (died_at_ms, as kReapUnpicked judges one that
// holds none), which the event log sees as container.dead.
//   ?1 container id ?2 slot ?3 now_ms
inline constexpr char kFreeLastSlotOfDead[] = R"sql(
UPDATE containers
SET status = 'dead', dead_reported = 0, died_at_ms = ?3, slots_used = 0,
    slot_map = substr(slot_map, 1, ?2) || '0' || substr(slot_map, ?2 + 2)
WHERE id = ?1 AND substr(slot_map, ?2 + 1, 1) = '1' AND dead_reported AND slots_used = 1
)sql";

// Renew: compare-and-swap on (session_id, token), only while the lease runs.
// A lease that would end sooner keeps its later end, unless ?6 (shorten).
//   ?1 session_id ?2 token ?3 tenant (NULL for an admin) ?4 now_ms ?5 new expiry
//   ?6 1 to shorten
// Success is one changed row; kGetSession then reads it.
inline constexpr char kRenew[] = R"sql(
UPDATE sessions
SET lease_expires_at_ms = CASE WHEN ?6 THEN ?5 ELSE MAX(lease_expires_at_ms, ?5) END
WHERE session_id = ?1 AND generation = ?2 AND (?3 IS NULL OR tenant = ?3)
  AND lease_expires_at_ms > ?4
)sql";

// A session as stored; also what a failed CAS found, to tell not_found,
// forbidden and stale_token apart.
inline constexpr auto kGetSession =
    Sql("SELECT ", kSessionColumnList, " FROM session_rows WHERE session_id = ?1");

// Is there any expired lease? A cheap read before a sweep is queued.
inline constexpr char kAnyExpired[] = R"sql(
SELECT 1 FROM sessions WHERE lease_expires_at_ms <= ?1 LIMIT 1
)sql";

// The lease reaper: at most ?2 expired sessions, oldest first, each then
// ended alone as a release is (store/sqlite/release.cc, EndSession), in a
// transaction of its own (never inside a claim).
inline constexpr char kExpiredSessions[] = R"sql(
SELECT session_id FROM sessions WHERE lease_expires_at_ms <= ?1
ORDER BY lease_expires_at_ms LIMIT ?2
)sql";
// One of them, once read (the reaper is alone in its transaction).
inline constexpr char kDeleteSession[] = "DELETE FROM sessions WHERE session_id = ?1";

// A step of the wall clock (store/clock_steps.h): every stored instant a
// sweep, a claim or a report compares with now moves by the step (?1 ms),
// in one transaction, so that leases keep their length, silences their
// measure and deaths their order against later reports (a death left ahead
// of a backward step would refuse the container's reports for as long).
// The history and claim counts keep theirs (shown, and pruned by age).
inline constexpr char kShiftLeases[] = R"sql(
UPDATE sessions SET lease_expires_at_ms = lease_expires_at_ms + ?1,
                    claimed_at_ms = claimed_at_ms + ?1
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
// slots may change: slot_map grows to it, never shrinks (a used slot past a
// lowered count stays used until its session ends, and no claim takes one:
// a claim takes the first free slot, always below slots while one is free),
// and the status says whether a slot is free under the new count.
// Attributes (?9) replace the stored ones whole; NULL (none given) keeps
// them (store/sqlite/selector_sql.h then copies them for the claims).
//   ?1 id ?2 region ?3 pool ?4 latency_ms ?5 data ?6 now_ms ?7 other shards' floor
//   ?8 slots ?9 attributes (JSON object text, or NULL)
inline constexpr char kUpsertContainer[] = R"sql(
INSERT INTO containers (id, region, pool, status, latency_ms, data, last_heartbeat_ms, generation,
                        slots, slot_map, attributes)
VALUES (?1, ?2, ?3, 'available', ?4, ?5, ?6,
        MAX(COALESCE(?7, 0), (SELECT generation FROM token_floor WHERE only_row = 1)),
        ?8, )sql" EDGEALLOC_SQL_FREE_SLOTS("?8") R"sql(, ?9)
ON CONFLICT (id) DO UPDATE SET
  latency_ms = excluded.latency_ms,
  data = excluded.data,
  attributes = COALESCE(excluded.attributes, attributes),
  last_heartbeat_ms = MAX(last_heartbeat_ms, excluded.last_heartbeat_ms),
  reported_ts_ms = 0,
  region = CASE WHEN slots_used > 0 THEN region ELSE excluded.region END,
  pool = CASE WHEN slots_used > 0 THEN pool ELSE excluded.pool END,
  slots = excluded.slots,
  slot_map = slot_map || )sql" EDGEALLOC_SQL_FREE_SLOTS("MAX(excluded.slots - length(slot_map), 0)") R"sql(,
  status = CASE WHEN status = 'dead' THEN
                  CASE WHEN drain_requested OR drain_reported THEN 'draining' ELSE 'available' END
                ELSE )sql" EDGEALLOC_SQL_STATUS_HOLDING("slots_used", "excluded.slots") R"sql( END
)sql";

inline constexpr auto kGetContainer =
    Sql("SELECT ", kContainerColumnList, " FROM container_rows WHERE id = ?1");

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
// session ends; dead when it comes back. kGetContainer then reads it.
inline constexpr char kDrain[] = R"sql(
UPDATE containers
SET status = CASE WHEN status = 'available' THEN 'draining' ELSE status END,
    drain_requested = 1
WHERE id = ?1
)sql";

// Undrain ends an operator's drain: draining becomes available, unless the
// container itself reported draining (its own ready ends that).
inline constexpr char kUndrain[] = R"sql(
UPDATE containers
SET status = CASE WHEN status = 'draining' AND drain_reported = 0 AND dead_reported = 0
                  THEN 'available' ELSE status END,
    drain_requested = 0
WHERE id = ?1
)sql";

inline constexpr char kRemoveUnpicked[] = R"sql(
DELETE FROM containers WHERE id = ?1 AND slots_used = 0
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
// session call answers 410 container_dead). slot_taken (a claim's scratch
// column) keeps how many sessions each held, read from the row before the
// update: RETURNING's last column, counted as sessions ended.
// died_at_ms = ?3, this node's now: when it was judged dead, which a late
// heartbeat's acceptance is compared with (store/report_counts_sql.h). Two
// index walks, as in kReapUnpicked below, never a walk of every held row (containers_session):
// a sweep runs in the writer whenever any container anywhere is silent.
// The pools of a mass silence (?5, a JSON array of [region, pool]) end the
// sessions of their silent containers only past the longer grace (?4).
//   ?1 cutoff_ms ?2 limit ?3 now_ms ?4 held_cutoff_ms ?5 held pools
inline constexpr char kReapPicked[] = R"sql(
UPDATE containers
SET status = 'dead', died_at_ms = ?3, slot_taken = slots_used,
    )sql" EDGEALLOC_SQL_END_SESSIONS("'container_dead'") R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE status <> 'dead' AND last_heartbeat_ms < ?1 AND slots_used > 0
               AND (last_heartbeat_ms < ?4 OR (region, pool) NOT IN
                    (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')
                     FROM json_each(?5)))
             UNION ALL
             SELECT id FROM containers
             WHERE dead_reported = 1 AND +slots_used > 0 AND last_heartbeat_ms >= ?1
             LIMIT ?2)
RETURNING )sql" EDGEALLOC_SQL_DEATH_COLUMNS R"sql(, slot_taken
)sql";

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
             WHERE status <> 'dead' AND last_heartbeat_ms < ?1 AND slots_used = 0
             UNION ALL
             SELECT id FROM containers
             WHERE dead_reported = 1 AND +slots_used = 0 AND +status <> 'dead'
               AND last_heartbeat_ms >= ?1
             LIMIT ?2)
RETURNING )sql" EDGEALLOC_SQL_DEATH_COLUMNS;

// ---- Capacity ----

// The mirror's read of a shard: the containers by region, pool and status,
// how many of them an operator drained, and their slots and used slots
// summed, answered from the covering index containers_counts (region, pool,
// status, drain_requested, slots, slots_used) without the table.
inline constexpr auto kCapacityCounts =
    Sql("SELECT ", kCapacityColumnList, " FROM containers GROUP BY region, pool, status");

// Then the ids under an operator's drain, for the heartbeat reply: a walk of
// the partial index containers_drain_requested, which holds only them, so
// the read costs the drained containers, never the fleet.
inline constexpr char kDrainedIds[] = "SELECT id FROM containers WHERE drain_requested = 1";

}  // namespace store::sql

#undef EDGEALLOC_SQL_STATUS_HOLDING
#undef EDGEALLOC_SQL_END_SESSIONS
#undef EDGEALLOC_SQL_FREE_SLOTS

#endif  // EDGEALLOC_STORE_SQLITE_LIFECYCLE_SQL_H_
