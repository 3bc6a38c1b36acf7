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
// (?12), a (key, value) row each value, and how many keys they have. The
// no_match read's WITH (kAnySelectorMatch) begins with them; a claim binds
// its terms instead (below).
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
// the placement's order, found by a walk of container_attributes_open from
// the driving term's open rows (?12 its key, ?13 its value or values; open:
// the container is available, store/sqlite/schema.cc version 18), each
// joined to its container by primary key (CROSS JOIN keeps that order: the
// attribute walk outside, never a walk of the pool's containers probing
// their attributes). The container's own region, pool and status are checked
// again (see the schema's version 11). Then one EXISTS a term other than the
// driving one, each a primary key lookup of the candidate's attribute row
// with the term's key and value bound (?15, ?16 the first such term, ?17,
// ?18 the next...): the selector's terms materialized from its JSON cost the
// candidate read about 1.5 x as much (docs/performance.md, "Placement,
// slots and selectors"). The text is a selector's shape, put together by
// store/sqlite/claim_selector.cc from these pieces; the claim statements of
// store/sqlite/claim_sql.h take from it.
//   ?1 region ?2 pool ?3 healthy_since_ms ?4 K ?12 driving key ?13 its value(s)

namespace store::sql {

// Its pieces, in order: kSelectedHead, the driving term's match
// (kDrivingOneValue or kDrivingValues), kSelectedOpen (kOpenRowsHead and
// kOpenRowsOpen in the open-rows form, below), then a check a term
// other than the driving one (kTermCheckHead, its key's parameter number,
// kTermCheckValue, then `= ?V` for one value or `IN (SELECT value FROM
// json_each(?V))` for a JSON array of several, and `)`), then
// `  ORDER BY <the placement's>\n  LIMIT ?4)\n`.
inline constexpr char kSelectedHead[] =
    "WITH candidate_pool AS (\n"
    "  SELECT a.container_id AS id, c.slots_used AS slots_used,\n"
    "         c.latency_ms AS latency_ms\n"
    "  FROM container_attributes a CROSS JOIN containers c ON c.id = a.container_id\n"
    "  WHERE a.region = ?1 AND a.pool = ?2 AND a.key = ?12 AND ";
inline constexpr char kDrivingOneValue[] = "a.value = ?13";
inline constexpr char kDrivingValues[] = "a.value IN (SELECT value FROM json_each(?13))";
// A row found open on a container that is not available is passed, and
// named to the claim's job (edgealloc_passed, store/sqlite/db.h Took).
inline constexpr char kSelectedOpen[] =
    " AND a.open = 1\n"
    "    AND c.region = ?1 AND c.pool = ?2\n"
    "    AND (c.status = 'available' OR edgealloc_passed(c.id))\n"
    "    AND c.last_heartbeat_ms >= ?3\n";
// The open-rows form of a fittest claim (store/sqlite/claim_selector.h,
// OpenRowsClaimStatement): the same walk and term checks, without the
// container of each candidate (two lookups: its key, then its row): the
// K fittest open rows are taken on their word, and the one picked is
// checked against its container in the take (claim_sql.h, kTakeOpenRow).
// In its place after the driving term's match: kOpenRowsOpen.
inline constexpr char kOpenRowsHead[] =
    "WITH candidate_pool AS (\n"
    "  SELECT a.container_id AS id FROM container_attributes a\n"
    "  WHERE a.region = ?1 AND a.pool = ?2 AND a.key = ?12 AND ";
inline constexpr char kOpenRowsOpen[] = " AND a.open = 1\n";
inline constexpr char kTermCheckHead[] =
    "    AND EXISTS (SELECT 1 FROM container_attributes m\n"
    "                WHERE m.container_id = a.container_id AND m.key = ?";
inline constexpr char kTermCheckValue[] = " AND m.value ";

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

// How many open attribute rows (available containers) hold `key` = `value`
// in a region and pool, up to ?5: a walk of container_attributes_open that
// stops there (DrivingCounts, store/sqlite/claim_selector.h).
//   ?1 region ?2 pool ?3 key ?4 value ?5 the cap
inline constexpr char kCountOpenAttributes[] = R"sql(
SELECT COUNT(*) FROM (SELECT 1 FROM container_attributes
                      WHERE region = ?1 AND pool = ?2 AND key = ?3 AND value = ?4 AND open = 1
                      LIMIT ?5)
)sql";

// A registration's copy of the container's attributes, after its upsert:
// the old rows go, and one row a key of the stored attributes comes, with
// the container's region, pool and latency as they are now.
//   ?1 id
inline constexpr char kDropAttributes[] =
    "DELETE FROM container_attributes WHERE container_id = ?1";
inline constexpr char kCopyAttributes[] = R"sql(
INSERT INTO container_attributes (container_id, key, value, region, pool, latency_ms, open)
SELECT c.id, j.key, j.value, c.region, c.pool, c.latency_ms, c.status = 'available'
FROM containers c, json_each(c.attributes) j
WHERE c.id = ?1
)sql";

// After any statement that may have changed container ?1's status: its
// attribute rows' `open` made its status = 'available' again (schema.cc,
// version 18). Rows already right are not rewritten (their index entries
// stay); a container without attributes costs one empty primary key seek.
// OR FAIL, and no function call: this and the two below change several rows,
// and a statement that may abort halfway would open a statement journal
// (store/sqlite/events_sql.h, version 16).
//   ?1 id
inline constexpr char kSyncAttributesOpen[] = R"sql(
UPDATE OR FAIL container_attributes
SET open = (SELECT status = 'available' FROM containers WHERE id = ?1)
WHERE container_id = ?1 AND open IS NOT (SELECT status = 'available' FROM containers WHERE id = ?1)
)sql";

// After a session of container ?1 ended: its rows open, whatever its
// status now, without reading it (one freed slot makes most containers
// available; one that is not, drained for one, is open only until a
// selector's walk passes it, Took::passed).
//   ?1 id
inline constexpr char kOpenAttributes[] = R"sql(
UPDATE OR FAIL container_attributes SET open = 1 WHERE container_id = ?1 AND open = 0
)sql";

// After a selector's claim took the last free slot of container ?1
// (Took::closed): no longer open.
//   ?1 id
inline constexpr char kCloseAttributes[] = R"sql(
UPDATE OR FAIL container_attributes SET open = 0 WHERE container_id = ?1 AND open = 1
)sql";

}  // namespace store::sql

#undef EDGEALLOC_SQL_OTHER_TERMS
#undef EDGEALLOC_SQL_EVERY_TERM_MATCHES

#endif  // EDGEALLOC_STORE_SQLITE_SELECTOR_SQL_H_
