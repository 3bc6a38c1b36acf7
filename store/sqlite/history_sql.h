#ifndef EDGEALLOC_STORE_SQLITE_HISTORY_SQL_H_
#define EDGEALLOC_STORE_SQLITE_HISTORY_SQL_H_

#include "store/row_columns.h"
#include "store/sql_text.h"

// The statements of the session history (store/sqlite/schema.cc, version 7:
// the table, and the trigger that fills it when a statement of
// store/sqlite/lifecycle_sql.h ends a session). A history row reads as a
// session (kSessionColumnList), then its end reason and end time.

namespace store::sql {

// An ended session, by its id.
inline constexpr auto kGetEndedSession =
    Sql("SELECT ", kSessionColumnList, ", end_reason, ended_at_ms FROM session_history ",
        "WHERE session_id = ?1");

// Is there anything to prune? A cheap read (two index lookups) before a
// prune is queued: a row ended before ?1, or more rows than ?2 (seq grows
// with every row inserted, so max - min bounds the count from above).
inline constexpr char kAnyHistoryToPrune[] = R"sql(
SELECT 1 WHERE EXISTS (SELECT 1 FROM session_history WHERE ended_at_ms < ?1)
            OR (SELECT max(seq) - min(seq) + 1 FROM session_history) > ?2
)sql";

// At most ?3 rows ended before ?1, oldest first (the index
// session_history_ended: never a scan).
inline constexpr char kPruneHistoryOld[] = R"sql(
DELETE FROM session_history
WHERE seq IN (SELECT seq FROM session_history WHERE ended_at_ms < ?1
              ORDER BY ended_at_ms LIMIT ?3)
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
