#ifndef EDGEALLOC_STORE_POSTGRES_SESSION_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_SESSION_SQL_H_

// The PostgreSQL statements of the sessions
// (store/postgres/postgres_storage_sessions.cc):
// claim, idempotent replay, release, renew, reads and lists.

#include "store/postgres/lifecycle_sql.h"
#include "store/postgres/list_sql.h"
#include "store/postgres/selector_sql.h"
#include "store/row_columns.h"
#include "store/sql_text.h"

namespace store::pgsql {

// The claim, one statement: the pick of the container and its slot (as
// store/sqlite/claim_sql.h says), and the session's row, written by a
// data-modifying CTE of the same statement. Which containers are candidates,
// and in what order, is the one fragment CANDIDATES / ORDER of
// selector_sql.h (without a selector, or with one). fittest: the K fastest
// candidates are read without a lock; one of them, at random, is locked
// (SKIP LOCKED: never one another transaction holds) and taken. Only that
// one row is locked until the group commits, so a concurrent claim on any
// node still finds the others. If every one of the K is locked by claims in
// flight, the fastest unlocked candidate beyond them is taken instead
// (`fallback` runs only then). packed and distributed walk the candidates
// in their order (containers_packing without a selector) and take the
// first; their claims of one pool take turns on the pool's advisory lock
// (taken before the group's jobs: postgres_storage_sessions.cc), so each
// sees the one before it and the packing is exact. A tenant over its quota,
// or an idempotency key a session holds, locks nothing. The K are
// materialized and joined to their rows by primary key. The re-check of
// their status is written `lower(status)` (statuses are lower case) so that
// it cannot match the partial index containers_claimable: with statistics
// from a fresh or just registered table the planner read every available
// container through that index, once or once a candidate, to find the K (1
// to 8 ms a claim at 1,000 containers instead of 0.1 ms; 50 to 550 cycles a
// second). The container's generation comes from the one sequence, so
// tokens grow per container across its slots.
//   $1 region $2 pool $3 dead_after_ms $4 K $5 session_id $6 tenant
//   $7 idempotency_key (or NULL) $8 lease_ms $9 quota (-1: none)
//   $10 labels (JSON text, or NULL)
//   and with a selector: $11 driving key $12 its values (text[]) $13 the selector's JSON
inline constexpr char kClaimQuota[] = R"sql(
WITH quota AS (
  SELECT ($9::bigint < 0 OR (SELECT count(*) FROM sessions WHERE tenant = $6) < $9::bigint)
     AND ($7::text IS NULL OR NOT EXISTS (SELECT 1 FROM sessions
                                          WHERE tenant = $6 AND idempotency_key = $7)) AS ok),
)sql";
#define EDGEALLOC_PG_CLAIM(CANDIDATES, ORDER)                                       \
  "candidate_pool AS MATERIALIZED (\n"                                              \
  "  SELECT c.id " CANDIDATES "\n"                                                  \
  "    AND (SELECT ok FROM quota)\n"                                                \
  "  ORDER BY " ORDER "\n"                                                          \
  "  LIMIT $4::bigint),\n"                                                          \
  "first_try AS (\n"                                                                \
  "  SELECT c.id FROM candidate_pool p JOIN containers c ON c.id = p.id\n"          \
  "  WHERE lower(c.status) = 'available'\n"                                         \
  "    AND c.last_heartbeat_ms >= " EDGEALLOC_PG_NOW_MS " - $3::bigint\n"           \
  "  ORDER BY random() LIMIT 1\n"                                                   \
  "  FOR UPDATE OF c SKIP LOCKED),\n"                                               \
  "fallback AS (\n"                                                                 \
  "  SELECT c.id " CANDIDATES "\n"                                                  \
  "    AND (SELECT ok FROM quota) AND NOT EXISTS (SELECT 1 FROM first_try)\n"       \
  "  ORDER BY " ORDER " LIMIT 1\n"                                                  \
  "  FOR UPDATE OF c SKIP LOCKED),\n"                                               \
  "pick AS (SELECT id AS picked FROM first_try UNION ALL SELECT id FROM fallback),\n"
// packed and distributed: the first candidate in ORDER ($4 named only so
// that every statement of the claim takes the same parameters).
#define EDGEALLOC_PG_CLAIM_ORDERED(CANDIDATES, ORDER)                               \
  "pick AS (\n"                                                                     \
  "  SELECT c.id AS picked " CANDIDATES "\n"                                        \
  "    AND (SELECT ok FROM quota) AND $4::bigint > 0\n"                             \
  "  ORDER BY " ORDER " LIMIT 1\n"                                                  \
  "  FOR UPDATE OF c SKIP LOCKED),\n"
#define EDGEALLOC_PG_PACKED_ORDER "c.slots_used DESC, c.latency_ms, c.id"
#define EDGEALLOC_PG_SPREAD_ORDER "c.slots_used, c.latency_ms, c.id"
inline constexpr char kClaimTake[] = R"sql(claimed AS (
  UPDATE containers c
  SET status = CASE WHEN c.slots_used + 1 >= c.slots THEN 'picked' ELSE c.status END,
      generation = nextval('edgealloc_tokens'), slots_used = c.slots_used + 1,
      slot_taken = strpos(c.slot_map, '0') - 1,
      slot_map = overlay(c.slot_map placing '1' from strpos(c.slot_map, '0') for 1)
  FROM pick
  WHERE c.id = pick.picked
  RETURNING c.id, c.region, c.pool, c.data, c.generation, c.slot_taken),
session AS (
  INSERT INTO sessions (session_id, container_id, slot, generation, tenant, idempotency_key,
                        lease_expires_at_ms, claimed_at_ms, labels)
  SELECT $5, id, slot_taken, generation, $6, $7,
         )sql" EDGEALLOC_PG_NOW_MS R"sql( + $8::bigint, )sql" EDGEALLOC_PG_NOW_MS R"sql(, $10
  FROM claimed
  RETURNING *)
SELECT c.id, c.region, c.pool, s.generation, s.lease_expires_at_ms, c.data, s.labels, s.tenant,
       s.session_id, s.slot
FROM claimed c JOIN session s ON true
)sql";
// Without a selector.
inline constexpr auto kClaimFittest = Sql(
    kClaimQuota, EDGEALLOC_PG_CLAIM(EDGEALLOC_PG_PLAIN_CANDIDATES, EDGEALLOC_PG_PLAIN_ORDER),
    kClaimTake);
inline constexpr auto kClaimPacked = Sql(
    kClaimQuota, EDGEALLOC_PG_CLAIM_ORDERED(EDGEALLOC_PG_PLAIN_CANDIDATES, EDGEALLOC_PG_PACKED_ORDER),
    kClaimTake);
inline constexpr auto kClaimDistributed = Sql(
    kClaimQuota, EDGEALLOC_PG_CLAIM_ORDERED(EDGEALLOC_PG_PLAIN_CANDIDATES, EDGEALLOC_PG_SPREAD_ORDER),
    kClaimTake);
// With a selector: its terms read once (selector_sql.h), after the quota; a
// driving term of one value, or of several.
inline constexpr char kClaimOtherTerms[] = EDGEALLOC_PG_OTHER_TERMS("$13", "$11") ",\n";
#define EDGEALLOC_PG_SELECTED_CLAIM(CLAIM, VALUE_MATCH, ORDER) \
  Sql(kClaimQuota, kClaimOtherTerms, CLAIM(EDGEALLOC_PG_SELECTED_CANDIDATES(VALUE_MATCH), ORDER), \
      kClaimTake)
inline constexpr auto kClaimSelectedOneValue = EDGEALLOC_PG_SELECTED_CLAIM(
    EDGEALLOC_PG_CLAIM, EDGEALLOC_PG_ONE_VALUE, EDGEALLOC_PG_SELECTED_ORDER);
inline constexpr auto kClaimSelectedValues = EDGEALLOC_PG_SELECTED_CLAIM(
    EDGEALLOC_PG_CLAIM, EDGEALLOC_PG_VALUES, EDGEALLOC_PG_SELECTED_ORDER);
inline constexpr auto kClaimPackedSelectedOneValue = EDGEALLOC_PG_SELECTED_CLAIM(
    EDGEALLOC_PG_CLAIM_ORDERED, EDGEALLOC_PG_ONE_VALUE, EDGEALLOC_PG_PACKED_ORDER);
inline constexpr auto kClaimPackedSelectedValues = EDGEALLOC_PG_SELECTED_CLAIM(
    EDGEALLOC_PG_CLAIM_ORDERED, EDGEALLOC_PG_VALUES, EDGEALLOC_PG_PACKED_ORDER);
inline constexpr auto kClaimDistributedSelectedOneValue = EDGEALLOC_PG_SELECTED_CLAIM(
    EDGEALLOC_PG_CLAIM_ORDERED, EDGEALLOC_PG_ONE_VALUE, EDGEALLOC_PG_SPREAD_ORDER);
inline constexpr auto kClaimDistributedSelectedValues = EDGEALLOC_PG_SELECTED_CLAIM(
    EDGEALLOC_PG_CLAIM_ORDERED, EDGEALLOC_PG_VALUES, EDGEALLOC_PG_SPREAD_ORDER);
#undef EDGEALLOC_PG_SELECTED_CLAIM
#undef EDGEALLOC_PG_CLAIM
#undef EDGEALLOC_PG_CLAIM_ORDERED
#undef EDGEALLOC_PG_PACKED_ORDER
#undef EDGEALLOC_PG_SPREAD_ORDER

inline constexpr char kCountTenantSessions[] =
    "SELECT count(*) FROM sessions WHERE tenant = $1";

//   $1 tenant $2 key
inline constexpr auto kFindIdempotent = Sql("SELECT ", kSessionColumnList, R"sql(
FROM session_rows
WHERE tenant = $1 AND idempotency_key = $2
  AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql");

// Does a session, live or not, hold the tenant's key? Asked only when a
// keyed claim took nothing (the claim statement takes nothing while one does).
//   $1 tenant $2 key
inline constexpr char kKeyHeld[] =
    "SELECT 1 FROM sessions WHERE tenant = $1 AND idempotency_key = $2";

inline constexpr char kForgetExpiredKey[] = R"sql(
UPDATE sessions SET idempotency_key = NULL
WHERE tenant = $1 AND idempotency_key = $2
  AND lease_expires_at_ms <= )sql" EDGEALLOC_PG_NOW_MS R"sql(
)sql";

// Release: the compare-and-swap deletes the session's row; in the same
// statement its history row is kept (the end reason as store/sqlite/
// release.cc says) and its slot given back, from the container row's own
// columns (a claim or release of another slot meanwhile is kept); the
// last session of a container that reported itself dead leaves it dead from
// now (died_at_ms, as the reaper's sweep of one). The history row is
// written first (the count of kept, read before any row is updated), so
// session.ended comes before the container.dead that the freed slot may
// bring, as on SQLite. Success: one container row changed.
//   $1 session_id $2 token $3 tenant (NULL for an admin) $4 abandoning
//   $5 the caller's tenant
inline constexpr auto kRelease = Sql(R"sql(
WITH ended AS (
  DELETE FROM sessions
  WHERE session_id = $1 AND generation = $2::bigint AND ($3::text IS NULL OR tenant = $3)
    AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
  RETURNING *),
kept AS (
  INSERT INTO session_history ()sql", kSessionColumnList, R"sql(, end_reason, ended_at_ms)
  SELECT c.id, c.region, c.pool, e.generation, e.lease_expires_at_ms, c.data, e.labels, e.tenant,
         e.session_id, e.slot,
         CASE WHEN $4::boolean THEN 'abandoned'
              WHEN $3::text IS NULL AND e.tenant IS DISTINCT FROM $5::text
                THEN 'released_by_admin'
              ELSE 'released' END,
         )sql" EDGEALLOC_PG_NOW_MS R"sql(
  FROM ended e JOIN containers c ON c.id = e.container_id
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id)
UPDATE containers c
SET status = )sql" EDGEALLOC_PG_STATUS_HOLDING("c.", "c.slots_used - 1", "c.slots") R"sql(,
    dead_reported = c.dead_reported AND c.slots_used > 1,
    died_at_ms = CASE WHEN c.dead_reported AND c.slots_used = 1 THEN )sql" EDGEALLOC_PG_NOW_MS R"sql(
                      ELSE c.died_at_ms END,
    slots_used = c.slots_used - 1,
    slot_map = overlay(c.slot_map placing '0' from e.slot + 1 for 1)
FROM ended e
WHERE c.id = e.container_id AND (SELECT count(*) FROM kept) >= 0
)sql");

//   $1 .. $3 as kRelease, $4 lease_ms (the new lease runs from now), $5 1 to
//   shorten (else a lease that would end sooner keeps its later end)
inline constexpr char kRenew[] = R"sql(
WITH renewed AS (
  UPDATE sessions
  SET lease_expires_at_ms = CASE WHEN $5::bigint = 1 THEN )sql" EDGEALLOC_PG_NOW_MS R"sql( + $4::bigint
                                 ELSE GREATEST(lease_expires_at_ms,
                                               )sql" EDGEALLOC_PG_NOW_MS R"sql( + $4::bigint) END
  WHERE session_id = $1 AND generation = $2::bigint AND ($3::text IS NULL OR tenant = $3)
    AND lease_expires_at_ms > )sql" EDGEALLOC_PG_NOW_MS R"sql(
  RETURNING *)
SELECT c.id, c.region, c.pool, r.generation, r.lease_expires_at_ms, c.data, r.labels, r.tenant,
       r.session_id, r.slot
FROM renewed r JOIN containers c ON c.id = r.container_id
)sql";

// A session as stored and, after it (column kSessionColumnCount), the
// database's now, which judges its lease, and the sum of the shifts made
// for steps of that clock (store/postgres/db_clock.h); also what a failed
// compare-and-swap found.
inline constexpr auto kGetSession =
    Sql("SELECT ", kSessionColumnList, ", " EDGEALLOC_PG_NOW_MS
        ", (SELECT shifted_ms FROM db_clock_shifts) FROM session_rows WHERE session_id = $1");

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
// the sessions' primary key (COLLATE "C") serves in any database collation.
// Two shapes: every tenant's, and one tenant's ($9), which walks
// sessions_tenant_session and
// reads no other tenant's rows.
//   $1 after $2 region $3 pool $4 label key $5 label value $6 limit + 1
//   $7 examined at most $8 byte budget (0: none) [$9 tenant]
inline constexpr auto kListSessionsExamined =
    Sql("WITH examined AS MATERIALIZED (SELECT ", kSessionColumnList, R"sql(
  FROM session_rows WHERE session_id COLLATE "C" > $1)sql");
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
