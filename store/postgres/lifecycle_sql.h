#ifndef EDGEALLOC_STORE_POSTGRES_LIFECYCLE_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_LIFECYCLE_SQL_H_

// The PostgreSQL engine's statements: the same lifecycle as
// store/sqlite/lifecycle_sql.h (read that file for the why of each rule), in
// PostgreSQL's dialect, `$N` placeholders. Differences: fencing tokens come
// from one sequence (they only grow, whatever is deleted and registered
// again); candidate rows are locked FOR UPDATE SKIP LOCKED, so concurrent
// claims on any node never wait on each other's candidates; sweeps skip rows
// another node is sweeping. A statement that returns a session or a
// container returns the row store/row_columns.h describes, first.
//
// Time: every decision that depends on the time (a lease's end, whether a
// lease still runs, an idempotency key's life, a container's silence) is
// taken from the database's clock, EDGEALLOC_PG_NOW_MS, in the statement
// that acts on it, never from a node's: nodes' wall clocks drift, step (NTP,
// a resumed VM) and may be tens of seconds apart, and a node whose clock ran
// ahead would otherwise end the sessions other nodes handed out. A node
// sends durations (a lease's length, dead_after_ms), never instants.
//
// The statements are kept by the job that runs them: schema_sql.h (the
// migration), session_sql.h, container_sql.h, heartbeat_sql.h, sweep_sql.h,
// clock_sql.h (the database's clock read, and its steps);
// this file holds what they share (the database's now, how a session ends)
// and the statements the writer (pg_writer.cc) opens a group with.

// The database's wall clock in ms since the epoch, as the statement started
// (statement_timestamp() is stable within a statement, so an index on a
// time column still serves a comparison with it).
#define EDGEALLOC_PG_NOW_MS "(floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)"

// The status of a container that is not dead and holds `used` sessions of
// `slots`, as store/sqlite/lifecycle_sql.h's EDGEALLOC_SQL_STATUS_HOLDING.
// `c` names the row ("c." or "").
#define EDGEALLOC_PG_STATUS_HOLDING(c, used, slots)                                 \
  "CASE WHEN " used " >= " slots " THEN 'picked' "                                  \
  "WHEN " c "dead_reported AND " used " = 0 THEN 'dead' "                           \
  "WHEN " c "drain_requested OR " c "drain_reported OR " c "dead_reported "         \
  "THEN 'draining' ELSE 'available' END"
// Ends every session of the container, saying why (`reason`, an SQL
// expression): setting end_reason with slots_used = 0 fires the trigger
// that keeps them in session_history and deletes them (schema_sql.h,
// version 13), as store/sqlite/lifecycle_sql.h's.
#define EDGEALLOC_PG_END_SESSIONS(reason)                                        \
  "end_reason = " reason ", dead_reported = false, slots_used = 0, "            \
  "slot_map = replace(slot_map, '1', '0')"

namespace store::pgsql {

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
  SELECT id FROM containers
  WHERE id = ANY($1::text[])
     OR id IN (SELECT container_id FROM sessions WHERE session_id = ANY($2::text[]))
  ORDER BY id COLLATE "C" FOR UPDATE) AS locked
)sql";
}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_LIFECYCLE_SQL_H_
