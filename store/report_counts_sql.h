#ifndef EDGEALLOC_STORE_REPORT_COUNTS_SQL_H_
#define EDGEALLOC_STORE_REPORT_COUNTS_SQL_H_

// When a heartbeat counts, in SQL both engines' heartbeat statements splice
// in (store/sqlite/lifecycle_sql.h, store/postgres/heartbeat_sql.h), so that
// the two engines hold one rule, written once.
//
// A report counts when it was accepted, not when it is written. The reaper
// stamps died_at_ms when it judges a container dead (the clock its silence
// is judged on: this node's on SQLite, the database's on PostgreSQL). A
// heartbeat that a node accepted before that moment and wrote after it (a
// batch queued on a node that was paused, cut off or stalled; a lane whose
// writes failed for a while) was heard too late: it changes neither
// liveness nor state, so it never revives a container whose death was
// already acted on (its session ended, its holder told). A report accepted
// after the death counts as any other, and so does one that may have been:
// accepted in the same millisecond, or (PostgreSQL) within the error of the
// node's measure of the database's clock, so that a container reporting
// right after its death is never refused. NULL died_at_ms (never judged
// dead, or dead before the column existed): every report counts.
//
// `accepted`: an SQL expression, the latest the row may have been accepted,
// on that clock.
#define EDGEALLOC_SQL_REPORT_COUNTS(accepted) \
  "(status <> 'dead' OR died_at_ms IS NULL OR " accepted " >= died_at_ms)"

#endif  // EDGEALLOC_STORE_REPORT_COUNTS_SQL_H_
