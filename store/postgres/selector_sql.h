#ifndef EDGEALLOC_STORE_POSTGRES_SELECTOR_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_SELECTOR_SQL_H_

// Container attributes and the claim's selector on PostgreSQL (store/sqlite/
// selector_sql.h says the why): the table and its index (schema_sql.h runs
// kContainerAttributes), a registration's copy of a container's attributes,
// the claim's candidate filter with a selector (the claim statement of
// session_sql.h is made from it), and the read that tells no_match.

#include "store/postgres/lifecycle_sql.h"

// Every term of the selector SELECTOR (a parameter: store::SelectorJson)
// matches the container a.container_id: primary key lookups, one a term.
#define EDGEALLOC_PG_EVERY_TERM_MATCHES(SELECTOR)                                  \
  "NOT EXISTS (SELECT 1 FROM jsonb_each(" SELECTOR "::jsonb) t "                   \
  "WHERE NOT EXISTS (SELECT 1 FROM container_attributes m "                        \
  "WHERE m.container_id = a.container_id AND m.key = t.key "                       \
  "AND m.value IN (SELECT jsonb_array_elements_text(t.value))))"

// The claim's candidates, as a FROM and WHERE of rows `c` of containers and
// the column they are ordered by (the K fittest: lowest latency first).
// Without a selector: the healthy available containers of the region and
// pool (containers_claimable). With one: the attribute rows of the driving
// term ($11 key, $12 its values) of the region and pool
// (container_attributes_claim), each joined to its container by primary
// key, which must be healthy and available and match every term. Its
// status is checked as `lower(status)` (statuses are lower case) so that
// it cannot match the partial index containers_claimable: the planner
// otherwise read the pool's available containers through it and joined
// the attribute rows to them (EXPLAIN, pg_selector_test), a walk of the
// pool. The attribute rows' region and pool are the container's (every
// registration rewrites them, and an older node refuses this schema).
//   $1 region $2 pool $3 dead_after_ms [$11 driving key $12 its values (text[])
//   $13 the selector's JSON]
#define EDGEALLOC_PG_HEALTHY_AVAILABLE                                             \
  "c.region = $1 AND c.pool = $2 AND c.status = 'available'\n"                     \
  "    AND c.last_heartbeat_ms >= " EDGEALLOC_PG_NOW_MS " - $3::bigint"
#define EDGEALLOC_PG_PLAIN_CANDIDATES "FROM containers c\n  WHERE " EDGEALLOC_PG_HEALTHY_AVAILABLE
#define EDGEALLOC_PG_PLAIN_ORDER "c.latency_ms"
#define EDGEALLOC_PG_SELECTED_CANDIDATES                                           \
  "FROM container_attributes a JOIN containers c ON c.id = a.container_id\n"       \
  "  WHERE a.region = $1 AND a.pool = $2 AND a.key = $11 AND a.value = ANY($12::text[])\n" \
  "    AND lower(c.status) = 'available'\n"                                        \
  "    AND c.last_heartbeat_ms >= " EDGEALLOC_PG_NOW_MS " - $3::bigint\n"          \
  "    AND " EDGEALLOC_PG_EVERY_TERM_MATCHES("$13")
#define EDGEALLOC_PG_SELECTED_ORDER "a.latency_ms"

namespace store::pgsql {

// The attributes' table (store/sqlite/schema.cc, version 11, says why each
// column), with schema version 12: its rows go with their container.
inline constexpr char kContainerAttributes[] = R"sql(
ALTER TABLE containers ADD COLUMN IF NOT EXISTS attributes text;
CREATE TABLE IF NOT EXISTS container_attributes (
  container_id text NOT NULL REFERENCES containers (id) ON DELETE CASCADE,
  key text NOT NULL,
  value text NOT NULL,
  region text NOT NULL,
  pool text NOT NULL,
  latency_ms bigint NOT NULL,
  PRIMARY KEY (container_id, key));
CREATE INDEX IF NOT EXISTS container_attributes_claim
  ON container_attributes (region, pool, key, value, latency_ms)
)sql";

// Does any container of the region and pool, whatever its status, match
// the selector? (After a claim with one found nothing: no_match or no_capacity.)
//   $1 region $2 pool $3 driving key $4 its values $5 the selector
// (An attribute row's container exists: its rows go with it.) The driving
// term's rows are a CTE, so that the planner plans them for all of them
// (the index) and not for the first (with LIMIT 1 and statistics that
// promise a match soon it read the whole table in order); a CTE yields its
// rows as they are asked for, so the read still stops at the first match.
inline constexpr char kAnySelectorMatch[] =
    "WITH driving AS MATERIALIZED (\n"
    "  SELECT container_id FROM container_attributes\n"
    "  WHERE region = $1 AND pool = $2 AND key = $3 AND value = ANY($4::text[]))\n"
    "SELECT 1 FROM driving a\n"
    "WHERE " EDGEALLOC_PG_EVERY_TERM_MATCHES("$5") "\n"
    "LIMIT 1\n";

// A registration's copy of the container's attributes after its upsert
// (store/sqlite's kDropAttributes, kCopyAttributes).
//   $1 id
inline constexpr char kDropAttributes[] =
    "DELETE FROM container_attributes WHERE container_id = $1";
inline constexpr char kCopyAttributes[] = R"sql(
INSERT INTO container_attributes (container_id, key, value, region, pool, latency_ms)
SELECT c.id, j.key, j.value, c.region, c.pool, c.latency_ms
FROM containers c, jsonb_each_text(COALESCE(c.attributes, '{}')::jsonb) j
WHERE c.id = $1
)sql";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_SELECTOR_SQL_H_
