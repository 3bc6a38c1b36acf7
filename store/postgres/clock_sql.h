#ifndef EDGEALLOC_STORE_POSTGRES_CLOCK_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_CLOCK_SQL_H_

// The PostgreSQL statements of the database's clock: a node's reading of it
// (its offset, and steps of it) and the shift of stored instants that
// answers a step (store/postgres/db_clock.cc).

namespace store::pgsql {

// The database's clock now, alone: a writer that does not watch for steps
// (PgWriterOptions::clock_steps unset) needs no edgealloc schema.
inline constexpr char kDbClockMs[] =
    "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

// The database's clock now, and the fleet's record of the shifts applied so
// far (schema_sql.h's db_clock_shifts), in one round trip.
inline constexpr char kDbClockReading[] =
    "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint, shifts, shifted_ms "
    "FROM db_clock_shifts";

// Claims the shift for the fleet: one row changed only if no node shifted
// since the count the node last read; its row lock holds a second claimant
// until this transaction ends, which then finds the count moved.
//   $1 the count expected $2 the shift in ms
inline constexpr char kClaimClockShift[] = R"sql(
UPDATE db_clock_shifts SET shifts = shifts + 1, shifted_ms = shifted_ms + $2::bigint
WHERE shifts = $1::bigint
)sql";

// Every stored instant a statement compares with the database's now moves
// by the step ($1 ms), so that leases keep their length, silences their
// measure and deaths their order against later reports. NULLs stay NULL.
// The history's end times and the published claim counts keep theirs
// (shown, and pruned by age), as on SQLite.
// The rows are locked first, in id order, as every group's preamble locks
// its own (lifecycle_sql.h kLockRows), so the shift never waits on a group
// in a cycle. Run only by a transaction that holds no row of its own.
inline constexpr char kShiftStoredInstants[] = R"sql(
WITH containers_moved AS (
  UPDATE containers SET last_heartbeat_ms = last_heartbeat_ms + $1::bigint,
                        died_at_ms = died_at_ms + $1::bigint
  WHERE id IN (SELECT id FROM containers ORDER BY id COLLATE "C" FOR UPDATE)
  RETURNING id)
UPDATE sessions SET lease_expires_at_ms = lease_expires_at_ms + $1::bigint,
                    claimed_at_ms = claimed_at_ms + $1::bigint
WHERE container_id IN (SELECT id FROM containers_moved)
)sql";

// The nodes' published "heard until" instants move with the rows they are
// compared with, and so do their stamps, which age them.
inline constexpr char kShiftHeardUntil[] = R"sql(
UPDATE node_heard_until SET heard_until_ms = heard_until_ms + $1::bigint,
                            updated_ms = updated_ms + $1::bigint
)sql";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_CLOCK_SQL_H_
