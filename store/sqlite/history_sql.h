#ifndef EDGEALLOC_STORE_SQLITE_HISTORY_SQL_H_
#define EDGEALLOC_STORE_SQLITE_HISTORY_SQL_H_

#include "store/row_columns.h"
#include "store/sql_text.h"

// The statements of the session history (store/sqlite/schema.cc, version 8:
// the table, and the trigger that fills it when a statement of
// store/sqlite/lifecycle_sql.h ends a session, but for a release, which
// keeps its own row). A history row reads as a
// session (kSessionColumnList), then its end reason and end time.

namespace store::sql {

// A released session kept as it was (store/sqlite/release.cc: a release
// ends its session without the trigger): the session's columns as
// kGetSession read them (?1 on, one a column of kSessionColumns), then the
// end reason and the end time. OR FAIL: a session ends once, so its id is
// never in the history yet (were it, the release fails whole); and no
// ABORT, so the event trigger's second write costs no statement journal
// (store/sqlite/events_sql.h, version 16; OR IGNORE cost 15k instructions
// a cycle more in callgrind).
inline constexpr auto kKeepEndedSession =
    Sql("INSERT OR FAIL INTO session_history (", kSessionColumnList,
        ", end_reason, ended_at_ms) VALUES (", Params<'?', 1, kSessionColumnCount + 2>(), ")");

// An ended session, by its id.
inline constexpr auto kGetEndedSession =
    Sql("SELECT ", kSessionColumnList, ", end_reason, ended_at_ms FROM session_history ",
        "WHERE session_id = ?1");

// Is there anything to prune? A cheap read (the first and last rows of the
// primary key) before a prune is queued: the oldest row ended before ?1, or
// more rows than ?2 (seq grows with every row inserted, so max - min bounds
// the count from above). max and min in subqueries of their own: SQLite
// reads one end of the key for a lone min() or max(), but `max(seq) -
// min(seq)` in one SELECT read the whole table, every reaper tick.
inline constexpr char kAnyHistoryToPrune[] = R"sql(
SELECT 1 WHERE (SELECT ended_at_ms FROM session_history ORDER BY seq LIMIT 1) < ?1
            OR (SELECT max(seq) FROM session_history) -
               (SELECT min(seq) FROM session_history) + 1 > ?2
)sql";

// Of the ?3 oldest rows by insertion (a range of the primary key: never a
// scan of the table), those ended before ?1. Rows are inserted in the order
// they end, so this is the oldest first; a row out of that order (the clock
// stepped back) goes when its own time comes, and may keep the rows behind
// it that long.
inline constexpr char kPruneHistoryOld[] = R"sql(
DELETE FROM session_history
WHERE seq < (SELECT min(seq) FROM session_history) + ?3 AND ended_at_ms < ?1
)sql";

// At most ?3 rows past the newest ?2, by insertion order (the primary key).
inline constexpr char kPruneHistoryOver[] = R"sql(
DELETE FROM session_history
WHERE seq IN (SELECT seq FROM session_history
              WHERE seq <= (SELECT max(seq) FROM session_history) - ?2
              ORDER BY seq LIMIT ?3)
)sql";

}  // namespace store::sql

#endif  // EDGEALLOC_STORE_SQLITE_HISTORY_SQL_H_
