#ifndef EDGEALLOC_ALLOCATOR_SQL_H_
#define EDGEALLOC_ALLOCATOR_SQL_H_

// The statements of the claim path, in one place so that what runs under the
// write lock can be read at a glance. Keywords in capitals, `?N` placeholders.

namespace allocator::sql {

// The claim: one statement. The candidate pool is the K healthy available
// containers of the region and pool with the lowest latency (a walk of the
// partial index containers_claimable); one of them, at random, is flipped to
// picked, its generation (the fencing token) bumped and the session stamped.
// The tenant quota is checked in the same statement, so no claim can slip
// past it. No row returned: nothing fitted, or the quota was reached.
//   ?1 region ?2 pool ?3 healthy_since_ms ?4 K ?5 session_id ?6 tenant
//   ?7 idempotency_key (or NULL) ?8 lease_expires_at_ms ?9 now_ms ?10 quota (-1: none)
inline constexpr char kClaim[] = R"sql(
WITH candidate_pool AS (
  SELECT id FROM containers
  WHERE region = ?1 AND pool = ?2 AND status = 'available' AND last_heartbeat_ms >= ?3
  ORDER BY latency_ms
  LIMIT ?4)
UPDATE containers
SET status = 'picked', generation = generation + 1, session_id = ?5, tenant = ?6,
    idempotency_key = ?7, lease_expires_at_ms = ?8, claimed_at_ms = ?9
WHERE id = (SELECT id FROM candidate_pool ORDER BY RANDOM() LIMIT 1)
  AND (?10 < 0 OR (SELECT COUNT(*) FROM containers
                   WHERE session_id IS NOT NULL AND tenant = ?6) < ?10)
RETURNING id, generation, lease_expires_at_ms, data
)sql";

// How many sessions a tenant holds in this shard (to tell quota from
// no_capacity after a claim returned nothing, and for other shards' share).
inline constexpr char kCountTenantSessions[] = R"sql(
SELECT COUNT(*) FROM containers WHERE session_id IS NOT NULL AND tenant = ?1
)sql";

// The live session of a tenant's idempotency key, if any: a session whose
// lease is over is not replayed, even before the reaper has freed it.
//   ?1 tenant ?2 key ?3 now_ms
inline constexpr char kFindIdempotent[] = R"sql(
SELECT session_id, id, region, pool, generation, lease_expires_at_ms, data
FROM containers
WHERE tenant = ?1 AND idempotency_key = ?2 AND session_id IS NOT NULL
  AND lease_expires_at_ms > ?3
)sql";

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
// container goes back to available; to draining if a drain was asked while it
// was picked; to dead if it reported itself dead meanwhile. Success is one
// changed row. The row is found by rowid through a subquery run once, not by
// `WHERE session_id = ?1`: an UPDATE that finds its row through an index it
// changes must first copy the keys to a temporary table, and SQLite builds
// one per execution; so would RETURNING (EXPLAIN showed both).
//   ?1 session_id ?2 token ?3 tenant (NULL for an admin) ?4 now_ms
inline constexpr char kRelease[] = R"sql(
UPDATE containers
SET status = CASE WHEN dead_reported THEN 'dead'
                  WHEN drain_requested THEN 'draining' ELSE 'available' END,
    drain_requested = 0, dead_reported = 0, session_id = NULL, tenant = NULL,
    idempotency_key = NULL, lease_expires_at_ms = NULL, claimed_at_ms = NULL
WHERE rowid = (SELECT rowid FROM containers WHERE session_id = ?1)
  AND generation = ?2 AND (?3 IS NULL OR tenant = ?3) AND lease_expires_at_ms > ?4
)sql";

// Renew: compare-and-swap on (session_id, token), only while the lease runs.
//   ?1 session_id ?2 token ?3 tenant (NULL for an admin) ?4 now_ms ?5 new expiry
inline constexpr char kRenew[] = R"sql(
UPDATE containers
SET lease_expires_at_ms = ?5
WHERE session_id = ?1 AND generation = ?2 AND (?3 IS NULL OR tenant = ?3)
  AND lease_expires_at_ms > ?4
RETURNING id, region, pool, generation, lease_expires_at_ms, data
)sql";

// What a failed CAS found, to tell not_found, forbidden and stale_token apart.
inline constexpr char kSessionState[] = R"sql(
SELECT generation, tenant, lease_expires_at_ms FROM containers WHERE session_id = ?1
)sql";

inline constexpr char kGetSession[] = R"sql(
SELECT id, region, pool, generation, lease_expires_at_ms, data, tenant
FROM containers WHERE session_id = ?1
)sql";

// Is there any expired lease? A cheap read before a sweep is queued.
inline constexpr char kAnyExpired[] = R"sql(
SELECT 1 FROM containers
WHERE session_id IS NOT NULL AND lease_expires_at_ms <= ?1 LIMIT 1
)sql";

// The lease reaper: frees at most ?2 expired sessions, oldest first, in a
// transaction of its own (never inside a claim).
inline constexpr char kReapExpired[] = R"sql(
UPDATE containers
SET status = CASE WHEN dead_reported THEN 'dead'
                  WHEN drain_requested THEN 'draining' ELSE 'available' END,
    drain_requested = 0, dead_reported = 0, session_id = NULL, tenant = NULL,
    idempotency_key = NULL, lease_expires_at_ms = NULL, claimed_at_ms = NULL
WHERE id IN (SELECT id FROM containers
             WHERE session_id IS NOT NULL AND lease_expires_at_ms <= ?1
             ORDER BY lease_expires_at_ms LIMIT ?2)
)sql";

// Registration: insert, or update what may change. The holder never changes;
// region and pool only when not picked; a dead container that is not picked
// comes back (registration counts as a heartbeat). A new row starts at the
// token floor (store/schema.cc, version 4): the highest generation of any row
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
  status = CASE WHEN status = 'dead' THEN 'available' ELSE status END
)sql";

inline constexpr char kGetContainer[] = R"sql(
SELECT id, region, pool, status, latency_ms, last_heartbeat_ms, generation,
       drain_requested, data, session_id
FROM containers WHERE id = ?1
)sql";

inline constexpr char kContainerExists[] = R"sql(
SELECT status FROM containers WHERE id = ?1
)sql";

// The token floor of this file (see kUpsertContainer).
inline constexpr char kTokenFloor[] = R"sql(
SELECT generation FROM token_floor WHERE only_row = 1
)sql";

// Drain: available becomes draining now; picked is marked, and becomes
// draining when its session ends.
inline constexpr char kDrain[] = R"sql(
UPDATE containers
SET status = CASE WHEN status = 'available' THEN 'draining' ELSE status END,
    drain_requested = CASE WHEN status = 'picked' THEN 1 ELSE drain_requested END
WHERE id = ?1
RETURNING status
)sql";

inline constexpr char kRemoveUnpicked[] = R"sql(
DELETE FROM containers WHERE id = ?1 AND status <> 'picked'
)sql";

}  // namespace allocator::sql

#endif  // EDGEALLOC_ALLOCATOR_SQL_H_
