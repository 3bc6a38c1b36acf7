#ifndef EDGEALLOC_STORE_SQLITE_SELECTOR_SQL_H_
#define EDGEALLOC_STORE_SQLITE_SELECTOR_SQL_H_

#include "store/sql_text.h"

// Container attributes and the claim's selector (store/selector.h), on
// SQLite: a registration's copy of a container's attributes into
// container_attributes (store/sqlite/schema.cc, version 11), and the claim's
// candidates when a selector names some (the CTE `candidate_pool` the claim
// statements of claim_sql.h take from here). Keywords in capitals, `?N`
// placeholders.

// The selector ?14 (store::SelectorJson: {"key":["v",...]}) read once a
// statement, not once a candidate: its terms other than the driving one
// (?12), a (key, value) row each value, and how many keys they have. A
// claim's WITH begins with them.
#define EDGEALLOC_SQL_OTHER_TERMS                                                 \
  "WITH other_terms(key, value) AS MATERIALIZED (\n"                              \
  "  SELECT DISTINCT t.key, v.value FROM json_each(?14) t, json_each(t.value) v\n" \
  "  WHERE t.key <> ?12),\n"                                                      \
  "other_keys(n) AS MATERIALIZED (SELECT COUNT(DISTINCT key) FROM other_terms)\n"

// Every other term matches the container `a.container_id` (the driving term
// matched on its index walk): as many of its attribute rows (primary key
// lookups) hold a term's key and one of its values as there are other keys;
// a container has one value a key, so each key counts once at most. With
// the selector's JSON parsed for each candidate instead (json_each in the
// check), the candidate read of a two-key selector cost 2.7 to 3.6 x as
// much (docs/performance.md).
#define EDGEALLOC_SQL_EVERY_TERM_MATCHES                                          \
  "(SELECT COUNT(*) FROM container_attributes m, other_terms s\n"                 \
  "     WHERE m.container_id = a.container_id AND s.key = m.key AND s.value = m.value)\n" \
  "    = (SELECT n FROM other_keys)"

// The claim's candidates under a selector: the K healthy available
// containers of the region and pool whose attributes match every term, in
// the placement's ORDER (fittest: the attribute row's latency, so that the
// walk of container_attributes_claim from the driving term (?12 its key;
// VALUE_MATCH its values) stops after K), each joined to its container by
// primary key (CROSS JOIN keeps that order: the attribute walk outside, never
// a walk of the pool's containers probing their attributes). The container's
// own region and pool are checked again (see the schema's version 11). The
// claim statements of store/sqlite/claim_sql.h take from it.
//   ?1 region ?2 pool ?3 healthy_since_ms ?4 K ?12 driving key ?13 its value(s)
//   ?14 the selector's JSON
#define EDGEALLOC_SQL_SELECTED_CANDIDATES(VALUE_MATCH, ORDER)                      \
  EDGEALLOC_SQL_OTHER_TERMS                                                        \
  ",candidate_pool AS (\n"                                                         \
  "  SELECT a.container_id AS id, c.slots_used AS slots_used,\n"                   \
  "         c.latency_ms AS latency_ms\n"                                          \
  "  FROM container_attributes a CROSS JOIN containers c ON c.id = a.container_id\n" \
  "  WHERE a.region = ?1 AND a.pool = ?2 AND a.key = ?12 AND " VALUE_MATCH "\n"   \
  "    AND c.region = ?1 AND c.pool = ?2 AND c.status = 'available'\n"           \
  "    AND c.last_heartbeat_ms >= ?3\n"                                            \
  "    AND " EDGEALLOC_SQL_EVERY_TERM_MATCHES "\n"                                 \
  "  ORDER BY " ORDER "\n"                                                         \
  "  LIMIT ?4)\n"

namespace store::sql {

// Does any container of the region and pool, whatever its status, match the
// selector? Asked only after a claim with a selector found nothing, to tell
// no_match (answered at once, never waited for) from no_capacity.
//   ?1 region ?2 pool ?12 driving key ?13 its values (JSON array) ?14 the selector
inline constexpr char kAnySelectorMatch[] =
    EDGEALLOC_SQL_OTHER_TERMS
    "SELECT 1 FROM container_attributes a\n"
    "WHERE a.region = ?1 AND a.pool = ?2 AND a.key = ?12\n"
    "  AND a.value IN (SELECT value FROM json_each(?13))\n"
    "  AND EXISTS (SELECT 1 FROM containers c\n"
    "              WHERE c.id = a.container_id AND c.region = ?1 AND c.pool = ?2)\n"
    "  AND " EDGEALLOC_SQL_EVERY_TERM_MATCHES "\n"
    "LIMIT 1\n";

// A registration's copy of the container's attributes, after its upsert:
// the old rows go, and one row a key of the stored attributes comes, with
// the container's region, pool and latency as they are now.
//   ?1 id
inline constexpr char kDropAttributes[] =
    "DELETE FROM container_attributes WHERE container_id = ?1";
inline constexpr char kCopyAttributes[] = R"sql(
INSERT INTO container_attributes (container_id, key, value, region, pool, latency_ms)
SELECT c.id, j.key, j.value, c.region, c.pool, c.latency_ms
FROM containers c, json_each(c.attributes) j
WHERE c.id = ?1
)sql";

}  // namespace store::sql

// EDGEALLOC_SQL_SELECTED_CANDIDATES, EDGEALLOC_SQL_OTHER_TERMS and
// EDGEALLOC_SQL_EVERY_TERM_MATCHES stay
// defined for store/sqlite/claim_sql.h, which undefines them.

#endif  // EDGEALLOC_STORE_SQLITE_SELECTOR_SQL_H_
