#ifndef EDGEALLOC_STORE_POSTGRES_LIFECYCLE_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_LIFECYCLE_SQL_H_

// The PostgreSQL engine's statements: the same lifecycle as
// store/sqlite/lifecycle_sql.h (read that file for the why of each rule), in
// PostgreSQL's dialect, `$N` placeholders. Differences: fencing tokens come
// from one sequence (they only grow, whatever is deleted and registered
// again); candidate rows are locked FOR UPDATE SKIP LOCKED, so concurrent
// claims on any node never wait on each other's candidates; sweeps skip rows
// another node is sweeping. Session rows are returned as id, region, pool,
// generation, lease_expires_at_ms, data, labels, tenant.
//
// Time: every decision that depends on the time (a lease's end, whether a
// lease still runs, an idempotency key's life, a container's silence) is
// taken from the database's clock, EDGEALLOC_PG_NOW_MS, in the statement
// that acts on it, never from a node's: nodes' wall clocks drift, step (NTP,
// a resumed VM) and may be tens of seconds apart, and a node whose clock ran
// ahead would otherwise end the sessions other nodes handed out. A node
// sends durations (a lease's length, dead_after_ms), never instants.

// The database's wall clock in ms since the epoch, as the statement started
// (statement_timestamp() is stable within a statement, so an index on a
// time column still serves a comparison with it).
#define EDGEALLOC_PG_NOW_MS "(floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)"

#define EDGEALLOC_PG_STATUS_AFTER_SESSION \
  "status = CASE WHEN dead_reported THEN 'dead' WHEN drain_requested THEN 'draining' " \
  "ELSE 'available' END"
#define EDGEALLOC_PG_END_SESSION                                                 \
  "drain_requested = false, dead_reported = false, session_id = NULL, tenant = NULL, " \
  "idempotency_key = NULL, lease_expires_at_ms = NULL, claimed_at_ms = NULL, labels = NULL"

namespace store::pgsql {

// The schema, version 2. Made by Migrate (postgres_storage.cc) under an
// advisory lock, so nodes starting together do not race. Version 2 added
// lane_hash (LaneHash of the id, store/postgres/lane.h): a node's heartbeat
// partition of a container is lane_hash % its writers, so each partition's
// dead-container sweep covers exactly the containers its lane writes.
// Version 3 added labels (a session's, JSON text; in no index, so heartbeats
// stay HOT). Version 4 made lists cost a page, not the fleet
// (Storage::ListSessions): (tenant, session_id) replaces (tenant), so a
// tenant's list walks its own sessions in the list's order (the quota's
// count by tenant uses it as it used (tenant)); and the lists' byte order
// (COLLATE "C") has an index of its own on session_id and on id, so that a
// database whose default collation is not C walks an index too instead of
// sorting every row. A node of an older version refuses a newer schema.
inline constexpr int kSchemaVersion = 4;
inline constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS edgealloc_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE SEQUENCE IF NOT EXISTS edgealloc_tokens;
CREATE TABLE IF NOT EXISTS containers (
  id text PRIMARY KEY,
  region text NOT NULL,
  pool text NOT NULL,
  status text NOT NULL CHECK (status IN ('available', 'picked', 'draining', 'dead')),
  latency_ms bigint NOT NULL DEFAULT 0,
  data text NOT NULL DEFAULT '{}',
  last_heartbeat_ms bigint NOT NULL DEFAULT 0,
  reported_ts_ms bigint NOT NULL DEFAULT 0,
  load double precision,
  generation bigint NOT NULL,
  drain_requested boolean NOT NULL DEFAULT false,
  dead_reported boolean NOT NULL DEFAULT false,
  session_id text UNIQUE,
  tenant text,
  idempotency_key text,
  lease_expires_at_ms bigint,
  claimed_at_ms bigint);
ALTER TABLE containers ADD COLUMN IF NOT EXISTS lane_hash integer NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN IF NOT EXISTS labels text;
-- Liveness (last_heartbeat_ms, reported_ts_ms, load) is in no index, so a
-- plain heartbeat is a HOT update.
CREATE INDEX IF NOT EXISTS containers_claimable ON containers (region, pool, latency_ms)
  WHERE status = 'available';
CREATE UNIQUE INDEX IF NOT EXISTS containers_idempotency ON containers (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS containers_tenant_session ON containers (tenant, session_id COLLATE "C")
  WHERE session_id IS NOT NULL;
DROP INDEX IF EXISTS containers_tenant;
CREATE INDEX IF NOT EXISTS containers_session_c ON containers (session_id COLLATE "C")
  WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS containers_id_c ON containers (id COLLATE "C");
CREATE INDEX IF NOT EXISTS containers_lease ON containers (lease_expires_at_ms)
  WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS containers_dead_reported ON containers (id)
  WHERE dead_reported AND status <> 'dead';
)sql";

// Version 1 to 2: the ids whose lane_hash is still to be set, and setting
// them ($1 ids, $2 their LaneHash).
inline constexpr char kIdsToHash[] = "SELECT id FROM containers";
inline constexpr char kSetLaneHashes[] = R"sql(
UPDATE containers c SET lane_hash = u.h
FROM unnest($1::text[], $2::integer[]) AS u(id, h) WHERE c.id = u.id
)sql";

// Whether the schema exists (non-NULL), without touching it.
inline constexpr char kMetaExists[] = "SELECT to_regclass('edgealloc_meta')::text";
inline constexpr char kGetSchemaVersion[] =
    "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'";
inline constexpr char kSetSchemaVersion[] =
    "INSERT INTO edgealloc_meta (key, value) VALUES ('schema_version', $1) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value";

// Serializes a tenant's claims across nodes while its quota is counted, so
// no two claims pass it together. Held to the end of the transaction.
inline constexpr char kLockTenant[] = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";
// kLockTenant of each key of $1 (text[]), once each, in the order of their
// lock ids: the sorted subquery feeds the aggregate row by row.
inline constexpr char kLockTenants[] = R"sql(
SELECT count(pg_advisory_xact_lock(h))
FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest($1::text[]) AS k ORDER BY h) AS ids
)sql";

// The keys of $1 (text[]) whose kLockTenant lock is not to be had now,
// taking those that are (once each, never waiting): after a group's
// kLockTenants timed out, which tenants' jobs must fail and which may go on.
inline constexpr char kTryLockTenants[] = R"sql(
SELECT k FROM (SELECT DISTINCT k FROM unnest($1::text[]) AS k) AS keys
WHERE NOT pg_try_advisory_xact_lock(hashtextextended(k, 0))
)sql";

// Locks, in id order (byte order, the same on every node), the rows of the
// ids $1 and of the sessions $2 (text[] each) that a group's jobs will
// change: a group then waits for rows only here, all at once and in one
// order, so two nodes' groups never wait on each other in a cycle
// (heartbeat batches, registrations, releases of overlapping containers).
// Claims lock nothing here: they take only a row no one holds (SKIP LOCKED).
inline constexpr char kLockRows[] = R"sql(
SELECT count(*) FROM (
  SELECT id FROM containers WHERE id = ANY($1::text[]) OR session_id = ANY($2::text[])
  ORDER BY id COLLATE "C" FOR UPDATE) AS locked
)sql";

// The database's clock now, for a node's measure of its offset.
inline constexpr char kDbClockMs[] =
    "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

// The claim. The K fastest healthy available containers are read without a
// lock; one of them, at random, is locked (SKIP LOCKED: never one another
// transaction holds) and taken. Only that one row is locked until the group
// commits, so a concurrent claim on any node still finds the others. If
// every one of the K is locked by claims in flight, the fastest unlocked
// container beyond them is taken instead (`fallback` runs only then). A
// tenant over its quota locks nothing. The K are materialized and joined
// to their rows by primary key. The re-check of their status is written
// `lower(status)` (statuses are lower case) so that it cannot match the
// partial index containers_claimable: with statistics from a fresh or just
// registered table the planner read every available container through
// that index, once or once a candidate, to find the K (1 to 8 ms a claim at
// 1,000 containers instead of 0.1 ms; 50 to 550 cycles a second).
//   $1 region $2 pool $3 dead_after_ms $4 K $5 session_id $6 tenant
//   $7 idempotency_key (or NULL) $8 lease_ms $9 quota (-1: none)
//   $10 labels (JSON text, or NULL)
inline constexpr char kClaim[] = R"sql(
WITH quota AS (
  SELECT $9::bigint < 0 OR (SELECT count(*) FROM containers
                            WHERE session_id IS NOT NULL AND tenant = $6) < $9::bigint AS ok),
candidate_pool AS MATERIALIZED (
  SELECT id FROM containers
  WHERE region = $1 AND pool = $2 AND status = 'available'
    AND last_heartbeat_ms >= )sql" EDGEALLOC_PG_NOW_MS R"sql( - $3::bigint
    AND (SELECT ok FROM quota)
  ORDER BY latency_ms
  LIMIT $4::bigint),
first_try AS (
  SELECT c.id FROM candidate_pool p JOIN containers c ON c.id = p.id
  WHERE lower(c.status) = 'available'
    AND c.last_heartbeat_ms >= )sql" EDGEALLOC_PG_NOW_MS R"sql( - $3::bigint
  ORDER BY random() LIMIT 1
  FOR UPDATE OF c SKIP LOCKED),
fallback AS (
  SELECT id FROM containers
  WHERE region = $1 AND pool = $2 AND status = 'available'
    AND last_heartbeat_ms >= )sql" EDGEALLOC_PG_NOW_MS R"sql( - $3::bigint
    AND (SELECT ok FROM quota) AND NOT EXISTS (SELECT 1 FROM first_try)
  ORDER BY latency_ms LIMIT 1
  FOR UPDATE SKIP LOCKED),
pick AS (SELECT id FROM first_try UNION ALL SELECT id FROM fallback)
UPDATE containers c
SET status = 'picked', generation = nextval('edgealloc_tokens'), session_id = $5, tenant = $6,
    idempotency_key = $7,
    lease_expires_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql( + $8::bigint,
    claimed_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql(, labels = $10
FROM pick
WHERE c.id = pick.id
RETURNING c.id, c.region, c.pool, c.generation, c.lease_expires_at_ms, c.data, c.labels,
          c.tenant
)sql";

inline constexpr char kCountTenantSessions[] =
    "SELECT count(*) FROM containers WHERE session_id IS NOT NULL AND tenant = $1";

//   $1 tenant $2 key
inline constexpr char kFindIdempotent[] = R"sql(
SELECT id, region, pool, generation, lease_expires_at_ms, data, labels, tenant, session_id
FROM containers
WHERE tenant = $1 AND idempotency_key = $2 AND session_id IS NOT NULL
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql";

inline constexpr char kForgetExpiredKey[] = R"sql(
UPDATE containers SET idempotency_key = NULL
WHERE tenant = $1 AND idempotency_key = $2
  AND lease_expires_at_ms <= )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql";

//   $1 session_id $2 token $3 tenant (NULL for an admin)
inline constexpr char kRelease[] = R"sql(
UPDATE containers
SET )sql" EDGEALLOC_PG_STATUS_AFTER_SESSION ", " EDGEALLOC_PG_END_SESSION R"sql(
WHERE session_id = $1 AND generation = $2::bigint AND ($3::text IS NULL OR tenant = $3)
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql";

//   $1 .. $3 as kRelease, $4 lease_ms (the new lease runs from now)
inline constexpr char kRenew[] = R"sql(
UPDATE containers SET lease_expires_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql( + $4::bigint
WHERE session_id = $1 AND generation = $2::bigint AND ($3::text IS NULL OR tenant = $3)
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
RETURNING id, region, pool, generation, lease_expires_at_ms, data, labels, tenant
)sql";

// A session's state and the database's now, which judges its lease.
inline constexpr char kSessionState[] =
    "SELECT generation, tenant, lease_expires_at_ms, " EDGEALLOC_PG_NOW_MS
    " FROM containers WHERE session_id = $1";

inline constexpr char kGetSession[] = R"sql(
SELECT id, region, pool, generation, lease_expires_at_ms, data, labels, tenant,
       )sql" EDGEALLOC_PG_NOW_MS R"sql(
FROM containers WHERE session_id = $1
)sql";

// A page of live sessions after $1 in session id order (store/sqlite's
// kListSessions), examining at most $7 sessions (ListExamineBound): the
// first $7 after $1, in an index's order, are `examined`; the rows are the
// first $6 (limit + 1) of them that the filters (NULL for any) match, last
// column true, then, when all $7 were there to examine, one row (last
// column false) with the last session id examined, where the next page
// starts (store/list_page.h). Ordered by session_id COLLATE "C" (byte
// order, as SQLite's and the cursor's), which containers_session_c serves
// in any database collation. Two shapes: every tenant's, and one tenant's
// ($8), which walks containers_tenant_session and reads no other tenant's rows.
//   $1 after $2 region $3 pool $4 label key $5 label value $6 limit + 1
//   $7 examined at most [$8 tenant]
#define EDGEALLOC_PG_LIST_SESSIONS(TENANT)                                                     \
  "WITH examined AS MATERIALIZED ("                                                           \
  " SELECT id, region, pool, generation, lease_expires_at_ms, data, labels, tenant, session_id" \
  " FROM containers WHERE session_id IS NOT NULL AND session_id COLLATE \"C\" > $1" TENANT   \
  " ORDER BY session_id COLLATE \"C\" LIMIT $7::bigint) "                                     \
  "(SELECT id, region, pool, generation, lease_expires_at_ms, data, labels, tenant,"          \
  " session_id, true FROM examined"                                                           \
  " WHERE lease_expires_at_ms > " EDGEALLOC_PG_NOW_MS                                         \
  " AND ($2::text IS NULL OR region = $2) AND ($3::text IS NULL OR pool = $3)"                \
  " AND ($4::text IS NULL OR (labels IS NOT NULL AND labels::jsonb ->> $4 = $5::text))"      \
  " ORDER BY session_id COLLATE \"C\" LIMIT $6::bigint) "                                     \
  "UNION ALL "                                                                                \
  "SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, max(session_id COLLATE \"C\"), false" \
  " FROM examined HAVING count(*) = $7::bigint"
inline constexpr char kListSessions[] = EDGEALLOC_PG_LIST_SESSIONS("");
inline constexpr char kListTenantSessions[] = EDGEALLOC_PG_LIST_SESSIONS(" AND tenant = $8");
#undef EDGEALLOC_PG_LIST_SESSIONS

// A page of containers after $1 in id order (byte order, containers_id_c),
// as kListSessions: at most $6 examined, the first $5 (limit + 1) that the
// filters match (last column true), then the last id examined when all $6
// were there (last column false, the id first).
//   $1 after $2 region $3 pool $4 status $5 limit + 1 $6 examined at most
inline constexpr char kListContainers[] = R"sql(
WITH examined AS MATERIALIZED (
  SELECT id, region, pool, status, latency_ms, last_heartbeat_ms, generation, drain_requested,
         data, session_id
  FROM containers WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $6::bigint)
(SELECT id, region, pool, status, latency_ms, last_heartbeat_ms, generation,
        CASE WHEN drain_requested THEN 1 ELSE 0 END, data, session_id, true
 FROM examined
 WHERE ($2::text IS NULL OR region = $2) AND ($3::text IS NULL OR pool = $3)
   AND ($4::text IS NULL OR status = $4)
 ORDER BY id COLLATE "C" LIMIT $5::bigint)
UNION ALL
SELECT max(id COLLATE "C"), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false
FROM examined HAVING count(*) = $6::bigint
)sql";

//   $1 limit
inline constexpr char kReapExpired[] = R"sql(
UPDATE containers
SET )sql" EDGEALLOC_PG_STATUS_AFTER_SESSION ", " EDGEALLOC_PG_END_SESSION R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE session_id IS NOT NULL
               AND lease_expires_at_ms <= )sql" EDGEALLOC_PG_NOW_MS R"sql(
             ORDER BY lease_expires_at_ms LIMIT $1::bigint
             FOR UPDATE SKIP LOCKED)
)sql";

//   $1 id $2 region $3 pool $4 latency_ms $5 data $6 LaneHash(id)
inline constexpr char kUpsertContainer[] = R"sql(
INSERT INTO containers (id, region, pool, status, latency_ms, data, last_heartbeat_ms, generation,
                        lane_hash)
VALUES ($1, $2, $3, 'available', $4::bigint, $5, )sql" EDGEALLOC_PG_NOW_MS R"sql(,
        nextval('edgealloc_tokens'), $6::integer)
ON CONFLICT (id) DO UPDATE SET
  latency_ms = excluded.latency_ms,
  data = excluded.data,
  last_heartbeat_ms = GREATEST(containers.last_heartbeat_ms, excluded.last_heartbeat_ms),
  reported_ts_ms = 0,
  region = CASE WHEN containers.status = 'picked' THEN containers.region ELSE excluded.region END,
  pool = CASE WHEN containers.status = 'picked' THEN containers.pool ELSE excluded.pool END,
  status = CASE WHEN containers.status = 'dead' THEN 'available' ELSE containers.status END
)sql";

inline constexpr char kGetContainer[] = R"sql(
SELECT id, region, pool, status, latency_ms, last_heartbeat_ms, generation,
       CASE WHEN drain_requested THEN 1 ELSE 0 END, data, session_id
FROM containers WHERE id = $1
)sql";

inline constexpr char kContainerExists[] = "SELECT 1 FROM containers WHERE id = $1";

inline constexpr char kDrain[] = R"sql(
UPDATE containers
SET status = CASE WHEN status = 'available' THEN 'draining' ELSE status END,
    drain_requested = CASE WHEN status = 'picked' THEN true ELSE drain_requested END
WHERE id = $1
RETURNING status
)sql";

inline constexpr char kRemoveUnpicked[] =
    "DELETE FROM containers WHERE id = $1 AND status <> 'picked'";

// Heartbeats: the three statements of store/sqlite/lifecycle_sql.h. The
// liveness stamp (last_heartbeat_ms) is the database's now at the write, not
// the node's clock at accept: silence is judged on the database's clock.
//   $1 id $2 ts_ms (or NULL) $3 load (or NULL) $4 state (or NULL)
inline constexpr char kHeartbeatPlain[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = GREATEST(last_heartbeat_ms, )sql" EDGEALLOC_PG_NOW_MS R"sql(),
  reported_ts_ms = COALESCE($2::bigint, reported_ts_ms),
  load = COALESCE($3::double precision, load)
WHERE id = $1 AND ($2::bigint IS NULL OR $2::bigint >= reported_ts_ms) AND (
  $4::text IS NULL
  OR ($4 = 'ready' AND (status = 'available' OR status = 'picked') AND NOT dead_reported)
  OR ($4 = 'draining' AND (status = 'draining' OR (status = 'picked' AND drain_requested)))
  OR ($4 = 'dead' AND (status = 'dead' OR (status = 'picked' AND dead_reported))))
)sql";

// Pools as waiting claims see them (kProbePool of the SQLite engine), all
// in one statement, healthy judged on the database's clock.
//   $1 regions $2 pools (text arrays, one pool per index) $3 dead_after_ms
inline constexpr char kProbePools[] = R"sql(
SELECT EXISTS (SELECT 1 FROM containers c WHERE c.region = p.region AND c.pool = p.pool),
       EXISTS (SELECT 1 FROM containers c
               WHERE c.region = p.region AND c.pool = p.pool AND c.status = 'available'
                 AND c.last_heartbeat_ms >= )sql" EDGEALLOC_PG_NOW_MS R"sql( - $3::bigint)
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(region, pool, n)
ORDER BY p.n
)sql";

inline constexpr char kHeartbeatReport[] = R"sql(
UPDATE containers SET
  last_heartbeat_ms = GREATEST(last_heartbeat_ms, )sql" EDGEALLOC_PG_NOW_MS R"sql(),
  reported_ts_ms = COALESCE($2::bigint, reported_ts_ms),
  load = COALESCE($3::double precision, load),
  status = CASE
    WHEN $4 = 'ready' AND status IN ('dead', 'draining') THEN 'available'
    WHEN $4 = 'draining' AND status = 'available' THEN 'draining'
    WHEN $4 = 'dead' AND status <> 'picked' THEN 'dead'
    ELSE status END,
  drain_requested = CASE WHEN $4 = 'draining' AND status = 'picked' THEN true
                         ELSE drain_requested END,
  dead_reported = CASE WHEN $4 = 'dead' AND status = 'picked' THEN true
                       WHEN $4 = 'ready' THEN false
                       ELSE dead_reported END
WHERE id = $1 AND ($2::bigint IS NULL OR $2::bigint >= reported_ts_ms)
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
inline constexpr char kHeartbeatBulk[] = R"sql(
UPDATE containers c SET
  last_heartbeat_ms = GREATEST(c.last_heartbeat_ms, )sql" EDGEALLOC_PG_NOW_MS R"sql(),
  reported_ts_ms = CASE WHEN u.ts_ms IS NOT NULL AND u.ts_ms >= c.reported_ts_ms
                        THEN u.ts_ms ELSE c.reported_ts_ms END,
  load = CASE WHEN u.ts_ms IS NULL OR u.ts_ms >= c.reported_ts_ms
              THEN COALESCE(u.load, c.load) ELSE c.load END
FROM unnest($1::text[], $2::bigint[], $3::double precision[], $4::text[])
     AS u(id, ts_ms, load, state)
WHERE c.id = u.id AND (
  u.state IS NULL
  OR (u.ts_ms IS NOT NULL AND u.ts_ms < c.reported_ts_ms)
  OR (u.state = 'ready' AND (c.status = 'available' OR c.status = 'picked')
      AND NOT c.dead_reported)
  OR (u.state = 'draining' AND (c.status = 'draining'
                                OR (c.status = 'picked' AND c.drain_requested)))
  OR (u.state = 'dead' AND (c.status = 'dead' OR (c.status = 'picked' AND c.dead_reported))))
RETURNING c.id, u.ts_ms IS NOT NULL AND c.reported_ts_ms > u.ts_ms
)sql";

inline constexpr char kHeartbeatStale[] =
    "UPDATE containers SET last_heartbeat_ms = GREATEST(last_heartbeat_ms, " EDGEALLOC_PG_NOW_MS
    ") WHERE id = $1";

// The dead-container sweep of one heartbeat partition: lane_hash % $3 = $4.
// Silent: a stored heartbeat more than $1 ms older than the database's now.
//   $1 silence_ms $2 limit $3 partitions $4 partition
inline constexpr char kReapPicked[] = R"sql(
UPDATE containers
SET status = 'dead', )sql" EDGEALLOC_PG_END_SESSION R"sql(
WHERE id IN (SELECT id FROM containers
             WHERE status = 'picked' AND (last_heartbeat_ms < )sql" EDGEALLOC_PG_NOW_MS R"sql( - $1::bigint OR dead_reported)
               AND lane_hash % $3::integer = $4::integer
             LIMIT $2::bigint
             FOR UPDATE SKIP LOCKED)
)sql";

inline constexpr char kReapUnpicked[] = R"sql(
UPDATE containers
SET status = 'dead', drain_requested = false, dead_reported = false
WHERE id IN (SELECT id FROM containers
             WHERE status IN ('available', 'draining')
               AND (last_heartbeat_ms < )sql" EDGEALLOC_PG_NOW_MS R"sql( - $1::bigint OR dead_reported)
               AND lane_hash % $3::integer = $4::integer
             LIMIT $2::bigint
             FOR UPDATE SKIP LOCKED)
)sql";

inline constexpr char kCapacityCounts[] =
    "SELECT region, pool, status, count(*) FROM containers GROUP BY region, pool, status "
    "ORDER BY region, pool, status";

}  // namespace store::pgsql

#undef EDGEALLOC_PG_STATUS_AFTER_SESSION
#undef EDGEALLOC_PG_NOW_MS
#undef EDGEALLOC_PG_END_SESSION

#endif  // EDGEALLOC_STORE_POSTGRES_LIFECYCLE_SQL_H_
