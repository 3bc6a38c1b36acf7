#ifndef EDGEALLOC_STORE_POSTGRES_LIST_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_LIST_SQL_H_

// The walk the PostgreSQL list statements share (kListSessions,
// kListEndedSessions, kListContainers). PostgreSQL hands a statement's rows
// over whole, so the engine cannot stop reading at a row as SQLite's does
// (store/sqlite/rows.h): the statement itself walks as WalkStopsAfter
// (store/list_page.h) does, and returns no row past where it stops.

#include <cstddef>

#include "store/sql_text.h"

namespace store::pgsql {

// Two CTEs after `examined` (the rows after the cursor in the list's key
// order, at most the examine bound): `walked`, each examined row with its
// bytes (`bytes`, RowTextBytes in SQL), whether the filters keep it
// (`filters`; NULL keeps nothing), the hits up to and with it, their bytes,
// and its place n; and `stop`, the n of the row the walk stops after (none
// when it runs out first): the `examine`-th row, the `limit_plus_one`-th hit,
// or the hit that brings the hits' bytes to `budget` (when above 0). A list
// statement returns the kept rows up to `stop`, then one row with the stop's
// key (store/postgres/rows.h, ListedPage).
template <size_t B, size_t F, size_t O, size_t L, size_t E, size_t G>
constexpr auto ListWalk(const SqlText<B>& bytes, const char (&filters)[F], const char (&order)[O],
                        const char (&limit_plus_one)[L], const char (&examine)[E],
                        const char (&budget)[G]) {
  return Sql(R"sql(,
walked AS (SELECT *, count(*) FILTER (WHERE kept) OVER walk AS hits,
                  sum(bytes) FILTER (WHERE kept) OVER walk AS hit_bytes,
                  row_number() OVER walk AS n
  FROM (SELECT *, )sql", bytes, R"sql( AS bytes, coalesce()sql", filters,
             R"sql(, false) AS kept
        FROM examined) verdicts
  WINDOW walk AS (ORDER BY )sql", order, R"sql( ROWS UNBOUNDED PRECEDING)),
stop AS (SELECT min(n) AS n FROM walked
  WHERE n = )sql", examine, R"sql(::bigint OR (kept AND (hits >= )sql", limit_plus_one,
             R"sql(::bigint OR ()sql", budget, R"sql(::bigint > 0 AND hit_bytes >= )sql", budget,
             R"sql(::bigint))))
)sql");
}

// What a list statement returns after ListWalk: each kept row of `columns`
// up to the stop (at most the `examine`-th), then true and NULL; and, when
// the walk stopped, one row of `nulls` (a NULL for each of `columns`), then
// false and the stop's `key` (store/postgres/rows.h, ListedPage).
template <size_t C, size_t N, size_t E, size_t K>
constexpr auto ListPageRows(const SqlText<C>& columns, const SqlText<N>& nulls,
                            const char (&examine)[E], const char (&key)[K]) {
  return Sql("SELECT ", columns, R"sql(, true, NULL FROM walked
 WHERE kept AND n <= coalesce((SELECT n FROM stop), )sql", examine, R"sql(::bigint)
UNION ALL
SELECT )sql", nulls, ", false, ", key, R"sql(
FROM walked WHERE n = (SELECT n FROM stop)
)sql");
}

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_LIST_SQL_H_
