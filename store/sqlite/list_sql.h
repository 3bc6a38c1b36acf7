#ifndef EDGEALLOC_STORE_SQLITE_LIST_SQL_H_
#define EDGEALLOC_STORE_SQLITE_LIST_SQL_H_

#include "store/row_columns.h"
#include "store/sql_text.h"

// The statements of the lists (Storage::ListSessions, ListEndedSessions,
// ListContainers): each walks one index in key order after (or before) the
// cursor and returns every row with the filters' verdict after it, and the
// engine stops after ListExamineBound rows (store/sqlite/rows.h,
// CollectPartitionPage). Reads, on reader connections.

namespace store::sql {

// A page of live sessions in session id order, after ?1 (keyset pagination:
// a page never repeats or skips a session that lives through the listing,
// whatever is claimed or released meanwhile). Every session after ?1 is a
// row, and its last column says whether the filters match it: the caller
// steps and stops after ListExamineBound rows (store/list_page.h), so
// filters that reject most rows cost a bounded walk, never the fleet (a
// filter in the WHERE clause would make SQLite walk on, unseen, to the end).
// Two shapes, each walking an index in session id order: every tenant's (the
// admin's list, the sessions' primary key) and one tenant's
// (sessions_tenant_session, whose leading tenant keeps other tenants' rows
// unread). Filters are NULL for any; a label is one key (?5) and its value (?6).
// The filters' verdict is the column after the session's (kSessionColumnCount).
//   ?1 after ?2 now_ms ?3 region ?4 pool ?5 label key ?6 label value [?7 tenant]
inline constexpr auto kListSessionsSelect = Sql("SELECT ", kSessionColumnList, R"sql(,
       lease_expires_at_ms > ?2 AND (?3 IS NULL OR region = ?3) AND (?4 IS NULL OR pool = ?4)
       AND (?5 IS NULL OR EXISTS (SELECT 1 FROM json_each(labels)
                                  WHERE key = ?5 AND value = ?6))
FROM session_rows )sql");
inline constexpr auto kListSessions = Sql(kListSessionsSelect, R"sql(
WHERE session_id > ?1
ORDER BY session_id
)sql");
inline constexpr auto kListTenantSessions = Sql(kListSessionsSelect, R"sql(
WHERE tenant = ?7 AND session_id > ?1
ORDER BY session_id
)sql");

// A partition's walk for a page of ended sessions (Storage::
// ListEndedSessions): every ended session before ?1 in session id order from
// the last (the UNIQUE index's), each with the filters' verdict after its end
// reason and end time. NULL filters match any; the tenant (?2) is a filter
// too, as no index leads with it.
//   ?1 before ?2 tenant ?3 region ?4 pool ?5 label key ?6 label value
inline constexpr auto kListEndedSessions = Sql("SELECT ", kSessionColumnList, R"sql(,
       end_reason, ended_at_ms,
       (?2 IS NULL OR tenant = ?2) AND (?3 IS NULL OR region = ?3) AND (?4 IS NULL OR pool = ?4)
       AND (?5 IS NULL OR EXISTS (SELECT 1 FROM json_each(labels)
                                  WHERE key = ?5 AND value = ?6))
FROM session_history WHERE session_id < ?1
ORDER BY session_id DESC
)sql");

// A page of containers in id order, after ?1 (keyset pagination, as
// kListSessions): every container after ?1 in id order (its primary key's
// index), the last column whether the filters (NULL for any) match it; the
// caller stops after ListExamineBound rows. An attribute is one key (?5)
// and its value (?6), read from the rows the walk reads, as a session list's label.
//   ?1 after ?2 region ?3 pool ?4 status ?5 attribute key ?6 attribute value
inline constexpr auto kListContainers = Sql("SELECT ", kContainerColumnList, R"sql(,
       (?2 IS NULL OR region = ?2) AND (?3 IS NULL OR pool = ?3) AND (?4 IS NULL OR status = ?4)
       AND (?5 IS NULL OR EXISTS (SELECT 1 FROM json_each(attributes)
                                  WHERE key = ?5 AND value = ?6))
FROM container_rows
WHERE id > ?1
ORDER BY id
)sql");

}  // namespace store::sql

#endif  // EDGEALLOC_STORE_SQLITE_LIST_SQL_H_
