#ifndef EDGEALLOC_STORE_SQLITE_CLAIM_SQL_H_
#define EDGEALLOC_STORE_SQLITE_CLAIM_SQL_H_

#include "store/sqlite/selector_sql.h"

// The claim's statements on SQLite, one a placement and a way of finding
// candidates. Each is one statement that picks the container and its slot:
// the CTE `candidate_pool` (the K candidates in the placement's order:
// EDGEALLOC_SQL_PLAIN_CANDIDATES here, or a selector's from selector_sql.h,
// the one place each says which containers fit a claim), then
// EDGEALLOC_SQL_TAKE_CANDIDATE, which takes one of them. Fittest walks the K
// lowest-latency candidates (containers_claimable, or the attribute index
// under a selector: there first in the open-rows form, kTakeOpenRow) and
// takes one at random; packed takes the one with the
// most used slots (among the fullest: EDGEALLOC_SQL_FULLEST_CANDIDATES),
// distributed the one with the fewest (containers_packing;
// lowest latency then id among equals: one order every claim agrees on).
// The container's generation (the fencing token) is bumped, its first free
// slot (the first '0' of slot_map) taken, and it is picked when that was its
// last free slot. What it took (the container, its new generation, the slot,
// its data, and whether it took the last free slot of a container with
// attributes, whose attribute rows the job then closes: selector_sql.h,
// kCloseAttributes) comes back through edgealloc_took (store/sqlite/db.h, Took), the
// last term of the WHERE, called for the one row the statement changes, and
// valid only if it changed one: not RETURNING, which built a temporary table
// and opened a statement journal every claim (docs/performance.md). The
// tenant quota, and a session holding the idempotency key, are checked in
// the same statement, so no claim can slip past either. No row changed: nothing fitted, the quota
// was reached or the key is held. kInsertSession then writes the session's
// row, in the same transaction.
//   ?1 region ?2 pool ?3 healthy_since_ms ?4 K ?5 tenant
//   ?6 idempotency_key (or NULL) ?7 quota (-1: none)
//   and with a selector: ?12 driving key ?13 its value(s), ?15 on its other terms

// A container a claim may take a slot of: of the region and pool, available
// (a free slot, not drained, not dead), heard from lately.
#define EDGEALLOC_SQL_CLAIMABLE \
  "region = ?1 AND pool = ?2 AND status = 'available' AND last_heartbeat_ms >= ?3"

#define EDGEALLOC_SQL_PLAIN_CANDIDATES(ORDER)              \
  "WITH candidate_pool AS (\n"                             \
  "  SELECT id, slots_used, latency_ms FROM containers\n"  \
  "  WHERE " EDGEALLOC_SQL_CLAIMABLE "\n"                   \
  "  ORDER BY " ORDER "\n"                                 \
  "  LIMIT ?4)\n"

// packed's candidates: those of the fullest healthy available containers
// (the most used slots), in latency order. Found in two index seeks of
// containers_packing (region, pool, slots_used, latency_ms): the fullest
// count first, read backwards, then that count's containers forwards.
// Ordered `slots_used DESC, latency_ms` in one walk instead, SQLite sorted
// the next count's containers whenever the fullest were fewer than K: with
// a few containers in use, the pool's idle ones, every claim (1.7 ms against
// 20 us at 1,000 idle containers, docs/performance.md).
#define EDGEALLOC_SQL_FULLEST_CANDIDATES                                               \
  "WITH fullest AS (\n"                                                               \
  "  SELECT slots_used AS used FROM containers\n"                                     \
  "  WHERE " EDGEALLOC_SQL_CLAIMABLE "\n"                                              \
  "  ORDER BY slots_used DESC LIMIT 1),\n"                                            \
  "candidate_pool AS (\n"                                                             \
  "  SELECT id, slots_used, latency_ms FROM containers\n"                             \
  "  WHERE " EDGEALLOC_SQL_CLAIMABLE "\n"                                              \
  "    AND slots_used = (SELECT used FROM fullest)\n"                                 \
  "  ORDER BY latency_ms, id\n"                                                       \
  "  LIMIT ?4)\n"

// CHECK: what the picked container must be besides, "" or `  AND ...\n`
// (a candidate checked already needs nothing more).
#define EDGEALLOC_SQL_TAKE_CANDIDATE(PICK, CHECK, CLOSES)                              \
  "UPDATE containers\n"                                                                \
  "SET status = CASE WHEN slots_used + 1 >= slots THEN 'picked' ELSE status END,\n"    \
  "    generation = generation + 1, slots_used = slots_used + 1,\n"                    \
  "    slot_taken = instr(slot_map, '0') - 1,\n"                                       \
  "    slot_map = substr(slot_map, 1, instr(slot_map, '0') - 1) || '1' ||\n"           \
  "               substr(slot_map, instr(slot_map, '0') + 1)\n"                        \
  "WHERE id = (SELECT id FROM candidate_pool ORDER BY " PICK " LIMIT 1)\n" CHECK       \
  "  AND (?7 < 0 OR (SELECT COUNT(*) FROM sessions WHERE tenant = ?5) < ?7)\n"         \
  "  AND (?6 IS NULL OR NOT EXISTS (SELECT 1 FROM sessions\n"                          \
  "                                 WHERE tenant = ?5 AND idempotency_key = ?6))\n"    \
  "  AND edgealloc_took(id, generation + 1, instr(slot_map, '0') - 1, data,\n"          \
  "                      " CLOSES ")\n"

// The placements' orders: of the candidates (a plain walk, a selector's walk
// with the attribute row `a` and the container `c`), and of the pick.
#define EDGEALLOC_SQL_PACKED_ORDER "slots_used DESC, latency_ms, id"
#define EDGEALLOC_SQL_PACKED_ORDER_C "c.slots_used DESC, c.latency_ms, c.id"
#define EDGEALLOC_SQL_SPREAD_ORDER "slots_used, latency_ms, id"
#define EDGEALLOC_SQL_SPREAD_ORDER_C "c.slots_used, c.latency_ms, c.id"

namespace store::sql {

// Without a selector.
inline constexpr char kClaimFittest[] = EDGEALLOC_SQL_PLAIN_CANDIDATES("latency_ms")
    EDGEALLOC_SQL_TAKE_CANDIDATE("RANDOM()", "", "0");
inline constexpr char kClaimPacked[] = EDGEALLOC_SQL_FULLEST_CANDIDATES
    EDGEALLOC_SQL_TAKE_CANDIDATE(EDGEALLOC_SQL_PACKED_ORDER, "", "0");
inline constexpr char kClaimDistributed[] = EDGEALLOC_SQL_PLAIN_CANDIDATES(
    EDGEALLOC_SQL_SPREAD_ORDER) EDGEALLOC_SQL_TAKE_CANDIDATE(EDGEALLOC_SQL_SPREAD_ORDER, "", "0");

// With a selector: the candidates' CTE is a selector's shape, put together
// by store/sqlite/claim_selector.cc (SelectedClaimSql) from selector_sql.h's
// pieces, then the placement's order of the walk (a row of the attribute
// walk `a` and its container `c`) and the take below: [placement] (fittest,
// packed, distributed).
inline constexpr const char* kSelectedOrder[3] = {"a.latency_ms", EDGEALLOC_SQL_PACKED_ORDER_C,
                                                  EDGEALLOC_SQL_SPREAD_ORDER_C};
#define EDGEALLOC_SQL_CLOSES "slots_used + 1 >= slots"
inline constexpr const char* kTakeSelected[3] = {
    EDGEALLOC_SQL_TAKE_CANDIDATE("RANDOM()", "", EDGEALLOC_SQL_CLOSES),
    EDGEALLOC_SQL_TAKE_CANDIDATE(EDGEALLOC_SQL_PACKED_ORDER, "", EDGEALLOC_SQL_CLOSES),
    EDGEALLOC_SQL_TAKE_CANDIDATE(EDGEALLOC_SQL_SPREAD_ORDER, "", EDGEALLOC_SQL_CLOSES)};
// The take of a selector's fittest claim whose candidates are its open
// attribute rows alone (selector_sql.h, kOpenRowsHead): the one it picks is
// checked against its container here, once, instead of each of the K in
// the walk.
inline constexpr char kTakeOpenRow[] = EDGEALLOC_SQL_TAKE_CANDIDATE(
    "RANDOM()", "  AND " EDGEALLOC_SQL_CLAIMABLE "\n", EDGEALLOC_SQL_CLOSES);

// The claimed session's row, after the claim took its slot. OR FAIL, not
// the default ABORT: with the event trigger the statement writes two tables,
// and one that may abort halfway gets a statement journal each run
// (store/sqlite/events_sql.h, version 16); a failed insert fails the whole
// group anyway (ClaimJob::ClaimIn).
//   ?1 session_id ?2 container id ?3 slot ?4 token ?5 tenant ?6 idempotency_key
//   (or NULL) ?7 lease_expires_at_ms ?8 now_ms ?9 labels (JSON text, or NULL)
inline constexpr char kInsertSession[] = R"sql(
INSERT OR FAIL INTO sessions (session_id, container_id, slot, generation, tenant, idempotency_key,
                      lease_expires_at_ms, claimed_at_ms, labels)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
)sql";

// Is the tenant's idempotency key held by a session (live or expired)? Asked
// only when a keyed claim took nothing, to tell the key from no capacity.
//   ?1 tenant ?2 key
inline constexpr char kKeyHeld[] = R"sql(
SELECT 1 FROM sessions WHERE tenant = ?1 AND idempotency_key = ?2
)sql";

}  // namespace store::sql

#undef EDGEALLOC_SQL_CLAIMABLE
#undef EDGEALLOC_SQL_PLAIN_CANDIDATES
#undef EDGEALLOC_SQL_TAKE_CANDIDATE
#undef EDGEALLOC_SQL_FULLEST_CANDIDATES
#undef EDGEALLOC_SQL_PACKED_ORDER
#undef EDGEALLOC_SQL_CLOSES
#undef EDGEALLOC_SQL_PACKED_ORDER_C
#undef EDGEALLOC_SQL_SPREAD_ORDER
#undef EDGEALLOC_SQL_SPREAD_ORDER_C

#endif  // EDGEALLOC_STORE_SQLITE_CLAIM_SQL_H_
