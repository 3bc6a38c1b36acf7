#ifndef EDGEALLOC_STORE_POSTGRES_SESSION_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_SESSION_SQL_H_

// The PostgreSQL statements of the sessions
// (store/postgres/postgres_storage_sessions.cc):
// claim, idempotent replay, release, renew, reads and lists.

#include "store/postgres/lifecycle_sql.h"
#include "store/postgres/list_sql.h"
#include "store/row_columns.h"
#include "store/sql_text.h"

namespace store::pgsql {

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
inline constexpr auto kClaim = Sql(R"sql(
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
pick AS (SELECT id AS picked FROM first_try UNION ALL SELECT id FROM fallback)
UPDATE containers c
SET status = 'picked', generation = nextval('edgealloc_tokens'), session_id = $5, tenant = $6,
    idempotency_key = $7,
    lease_expires_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql( + $8::bigint,
    claimed_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql(, labels = $10
FROM pick
WHERE c.id = pick.picked
RETURNING )sql", kSessionColumnList, "\n");

inline constexpr char kCountTenantSessions[] =
    "SELECT count(*) FROM containers WHERE session_id IS NOT NULL AND tenant = $1";

//   $1 tenant $2 key
inline constexpr auto kFindIdempotent = Sql("SELECT ", kSessionColumnList, R"sql(
FROM containers
WHERE tenant = $1 AND idempotency_key = $2 AND session_id IS NOT NULL
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql");

inline constexpr char kForgetExpiredKey[] = R"sql(
UPDATE containers SET idempotency_key = NULL
WHERE tenant = $1 AND idempotency_key = $2
  AND lease_expires_at_ms <= )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql";

// The end reason as store/sqlite's kRelease says.
//   $1 session_id $2 token $3 tenant (NULL for an admin) $4 abandoning
//   $5 the caller's tenant
inline constexpr char kRelease[] = R"sql(
UPDATE containers
SET )sql" EDGEALLOC_PG_STATUS_AFTER_SESSION ", " EDGEALLOC_PG_END_SESSION(
    "CASE WHEN $4::boolean THEN 'abandoned' WHEN $3::text IS NULL AND tenant IS DISTINCT FROM "
    "$5::text THEN 'released_by_admin' ELSE 'released' END") R"sql(
WHERE session_id = $1 AND generation = $2::bigint AND ($3::text IS NULL OR tenant = $3)
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql";

//   $1 .. $3 as kRelease, $4 lease_ms (the new lease runs from now)
inline constexpr auto kRenew = Sql(R"sql(
UPDATE containers SET lease_expires_at_ms = )sql" EDGEALLOC_PG_NOW_MS R"sql( + $4::bigint
WHERE session_id = $1 AND generation = $2::bigint AND ($3::text IS NULL OR tenant = $3)
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
RETURNING )sql", kSessionColumnList, "\n");

// A session as stored and, after it (column kSessionColumnCount), the
// database's now, which judges its lease, and the sum of the shifts made
// for steps of that clock (store/postgres/db_clock.h); also what a failed
// compare-and-swap found.
inline constexpr auto kGetSession =
    Sql("SELECT ", kSessionColumnList, ", " EDGEALLOC_PG_NOW_MS
        ", (SELECT shifted_ms FROM db_clock_shifts) FROM containers WHERE session_id = $1");

// An ended session, by its id (schema_sql.h's session_history).
inline constexpr auto kGetEndedSession =
    Sql("SELECT ", kSessionColumnList, ", end_reason, ended_at_ms FROM session_history ",
        "WHERE session_id = $1");

// A page of ended sessions before $1 in session id order from the last
// (Storage::ListEndedSessions; store/sqlite's kListEndedSessions), shaped as
// kListSessions below: the first $8 before $1 in the UNIQUE index's order
// (session_history.session_id is COLLATE "C", so its index is the cursor's
// byte order in any database collation) are `examined`, walked as
// ListWalk (store/postgres/list_sql.h) with the filters (NULL for any; the
// tenant too, as no index leads with it); a row's bytes count its end reason.
//   $1 before $2 tenant $3 region $4 pool $5 label key $6 label value
//   $7 limit + 1 $8 examined at most $9 byte budget (0: none)
inline constexpr auto kListEndedSessions = Sql(
    "WITH examined AS MATERIALIZED (SELECT ", kSessionColumnList, R"sql(, end_reason, ended_at_ms
  FROM session_history WHERE session_id < $1 ORDER BY session_id DESC LIMIT $8::bigint))sql",
    ListWalk(Sql(kSessionTextBytesSql, " + coalesce(octet_length(end_reason), 0)"), R"sql(
        ($2::text IS NULL OR tenant = $2) AND ($3::text IS NULL OR region = $3)
        AND ($4::text IS NULL OR pool = $4)
        AND ($5::text IS NULL OR (labels IS NOT NULL AND labels::jsonb ->> $5 = $6::text)))sql",
             "session_id DESC", "$7", "$8", "$9"),
    ListPageRows(Sql(kSessionColumnList, ", end_reason, ended_at_ms"),
                 Sql(kSessionNullList, ", NULL, NULL"), "$8", "session_id"));

// A page of live sessions after $1 in session id order (store/sqlite's
// kListSessions): the first $7 after $1 (ListExamineBound), in an index's
// order, are `examined`, walked as ListWalk (store/postgres/list_sql.h):
// the rows are the ones the filters (NULL for any) keep up to where the walk
// stops (the $6-th, limit + 1, or the one that brings their bytes to $8),
// the column after the session true, then, when the walk stopped, one row
// (that column false) whose last column is the last session id examined,
// where the next page starts (store/list_page.h). Ordered by session_id
// COLLATE "C" (byte order, as SQLite's and the cursor's), which
// containers_session_c serves in any database collation. Two shapes: every
// tenant's, and one tenant's ($9), which walks containers_tenant_session and
// reads no other tenant's rows.
//   $1 after $2 region $3 pool $4 label key $5 label value $6 limit + 1
//   $7 examined at most $8 byte budget (0: none) [$9 tenant]
inline constexpr auto kListSessionsExamined =
    Sql("WITH examined AS MATERIALIZED (SELECT ", kSessionColumnList, R"sql(
  FROM containers WHERE session_id IS NOT NULL AND session_id COLLATE "C" > $1)sql");
inline constexpr auto kListSessionsPage = Sql(
    R"sql(
  ORDER BY session_id COLLATE "C" LIMIT $7::bigint))sql",
    ListWalk(kSessionTextBytesSql, R"sql(lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
        AND ($2::text IS NULL OR region = $2) AND ($3::text IS NULL OR pool = $3)
        AND ($4::text IS NULL OR (labels IS NOT NULL AND labels::jsonb ->> $4 = $5::text)))sql",
             R"sql(session_id COLLATE "C")sql", "$6", "$7", "$8"),
    ListPageRows(kSessionColumnList, kSessionNullList, "$7", "session_id"));
inline constexpr auto kListSessions = Sql(kListSessionsExamined, kListSessionsPage);
inline constexpr auto kListTenantSessions =
    Sql(kListSessionsExamined, " AND tenant = $9", kListSessionsPage);

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_SESSION_SQL_H_
