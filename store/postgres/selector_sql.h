#ifndef EDGEALLOC_STORE_POSTGRES_SELECTOR_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_SELECTOR_SQL_H_

// Container attributes and the claim's selector on PostgreSQL (store/sqlite/
// selector_sql.h says the why): the table and its index (schema_sql.h runs
// kContainerAttributes), a registration's copy of a container's attributes,
// the claim's candidate filter with a selector (the claim statement of
// session_sql.h is made from it), and the read that tells no_match.

#include "store/postgres/lifecycle_sql.h"

// The selector SELECTOR (a parameter: store::SelectorJson) read once a
// statement, not once a candidate (as store/sqlite/selector_sql.h's
// other_terms): its terms other than the driving one (DRIVING_KEY), a row
// a key with its values. A CTE of the claim's and kAnySelectorMatch's WITH.
#define EDGEALLOC_PG_OTHER_TERMS(SELECTOR, DRIVING_KEY)                            \
  "other_terms AS MATERIALIZED (\n"                                                \
  "  SELECT t.key, ARRAY(SELECT jsonb_array_elements_text(t.value)) AS vals\n"     \
  "  FROM jsonb_each(" SELECTOR "::jsonb) t WHERE t.key <> " DRIVING_KEY ")"

// Every other term matches the container a.container_id (the driving term
// matched on the index walk): a primary key lookup a term. With the
// selector's JSON parsed here for each candidate instead (jsonb_each in the
// check), the plan ran one function scan a candidate, in each of the
// claim's two candidate reads.
#define EDGEALLOC_PG_EVERY_TERM_MATCHES                                            \
  "NOT EXISTS (SELECT 1 FROM other_terms t "                                       \
  "WHERE NOT EXISTS (SELECT 1 FROM container_attributes m "                        \
  "WHERE m.container_id = a.container_id AND m.key = t.key "                       \
  "AND m.value = ANY(t.vals)))"

// The claim's candidates, as a FROM and WHERE of rows `c` of containers and
// the column they are ordered by (the K fittest: lowest latency first).
// Without a selector: the healthy available containers of the region and
// pool (containers_claimable). With one: the attribute rows of the driving
// term ($11 key, $12 its values) of the region and pool
// (container_attributes_claim), each joined to its container by primary
// key, which must be healthy and available and match every term. The
// attribute rows' region and pool are the container's (every registration
// rewrites them, and an older node refuses this schema).
//
// Two things keep the walk on the attribute index, in latency order, and
// stop it after K (EXPLAIN in pg_selector_test, on a pool of 1,000):
// - Availability is written as `status` is none of the other three (the
//   schema's CHECK allows four): the statistics then say how many are
//   available, and the partial index containers_claimable (status =
//   'available') cannot serve it. Written `status = 'available'`, the
//   planner read the pool through that index and probed attributes; written
//   `lower(status) = 'available'` (an unknown expression, estimated at 0.5%
//   of the rows), it read the whole pool first, by sequential scan, as the
//   "few" available ones: 4 to 8 ms a claim at 1,000 containers.
// - A driving term of one value is matched by equality (VALUE_MATCH
//   EDGEALLOC_PG_ONE_VALUE, the first element of $12): the index then gives
//   the rows in latency order. `= ANY` of several values cannot (PostgreSQL
//   15 merges no ordered runs), so those claims sort the matching rows.
//   $1 region $2 pool $3 dead_after_ms [$11 driving key $12 its values (text[])
//   $13 the selector's JSON]
#define EDGEALLOC_PG_HEALTHY_AVAILABLE                                             \
  "c.region = $1 AND c.pool = $2 AND c.status = 'available'\n"                     \
  "    AND c.last_heartbeat_ms >= " EDGEALLOC_PG_NOW_MS " - $3::bigint"
#define EDGEALLOC_PG_PLAIN_CANDIDATES "FROM containers c\n  WHERE " EDGEALLOC_PG_HEALTHY_AVAILABLE
#define EDGEALLOC_PG_PLAIN_ORDER "c.latency_ms"
#define EDGEALLOC_PG_ONE_VALUE "a.value = ($12::text[])[1]"
#define EDGEALLOC_PG_VALUES "a.value = ANY($12::text[])"
#define EDGEALLOC_PG_SELECTED_CANDIDATES(VALUE_MATCH)                              \
  "FROM container_attributes a JOIN containers c ON c.id = a.container_id\n"       \
  "  WHERE a.region = $1 AND a.pool = $2 AND a.key = $11 AND " VALUE_MATCH "\n"    \
  "    AND c.status <> 'picked' AND c.status <> 'draining' AND c.status <> 'dead'\n" \
  "    AND c.last_heartbeat_ms >= " EDGEALLOC_PG_NOW_MS " - $3::bigint\n"          \
  "    AND " EDGEALLOC_PG_EVERY_TERM_MATCHES
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
    "  WHERE region = $1 AND pool = $2 AND key = $3 AND value = ANY($4::text[])),\n"
    EDGEALLOC_PG_OTHER_TERMS("$5", "$3") "\n"
    "SELECT 1 FROM driving a\n"
    "WHERE " EDGEALLOC_PG_EVERY_TERM_MATCHES "\n"
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
