#ifndef EDGEALLOC_STORE_SQLITE_ROWS_H_
#define EDGEALLOC_STORE_SQLITE_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/list_page.h"
#include "store/row_columns.h"
#include "store/sqlite/db.h"
#include "store/sqlite/shard.h"
#include "store/storage.h"
#include "store/types.h"

namespace store {

// The cells of a statement's current row, as ReadRow (store/row_columns.h)
// reads them: SQLite's booleans are integers.
class SqliteCells {
 public:
  explicit SqliteCells(const Statement& q) : q_(q) {}
  bool IsNull(int col) const { return q_.ColumnIsNull(col); }
  std::string_view Text(int col) const { return q_.ColumnText(col); }
  int64_t Int64(int col) const { return q_.ColumnInt64(col); }
  bool Bool(int col) const { return q_.ColumnInt64(col) != 0; }

 private:
  const Statement& q_;
};

// Reads the session row (kSessionColumnList) that starts the statement's
// current row into *s.
void ReadSessionRow(const Statement& q, Session* s);
// Reads the container row (kContainerColumnList) that starts it into *c.
void ReadContainerRow(const Statement& q, ContainerInfo* c);
// Reads a history row (store/sqlite/history_sql.h, list_sql.h
// kListEndedSessions): the session row, then its end reason and end time.
EndedSession ReadEndedSessionRow(const Statement& q);
// Binds `value`, or NULL when it is empty (a filter that matches anything).
void BindOrNull(Statement* q, int index, const std::string& value);

// Reads the one row of `columns` that `sql` finds for `key` (?1) into
// *found, if there is one.
template <typename Row, size_t N>
Status ReadOneRow(Db* db, const char* sql, const std::string& key,
                  const Column<Row> (&columns)[N], std::optional<Row>* found) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql, &q));
  q->Bind(1, key);
  bool row = false;
  RETURN_IF_ERROR(q->Step(&row));
  if (row) ReadRow(columns, SqliteCells(*q), &found->emplace());
  return Status::Ok();
}

// Steps a statement that answers whether a row exists (SELECT 1 ... LIMIT
// 1) with `args` bound to ?1, ?2, ... in order; *any if it returned one.
template <typename... Args>
Status AnyRow(Db* db, const char* sql, bool* any, const Args&... args) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql, &q));
  int index = 0;
  (q->Bind(++index, args), ...);
  return q->Step(any);
}

// One partition's share of a list page (ListSessions, ListContainers): steps
// `q`, whose rows come in key order with column `kept` 1 where the filters
// keep the row and column `key` its key, until the rows run out or
// WalkStopsAfter says the walk ends (store/list_page.h: the examine bound,
// limit + 1 kept, or the kept rows' bytes at the budget), reading no row
// after that; `read(q)` makes a kept row.
template <typename Row, typename Read>
Status CollectPartitionPage(Statement& q, const PageBounds& bounds, int kept, int key, Read read,
                            PartitionPage<Row>* part) {
  for (;;) {
    bool row = false;
    RETURN_IF_ERROR(q.Step(&row));
    if (!row) return Status::Ok();
    std::optional<Row> hit;
    if (q.ColumnInt64(kept) != 0) hit = read(q);
    if (WalkStopsAfter(bounds, std::move(hit), part)) {
      part->stopped_at = q.ColumnString(key);
      return Status::Ok();
    }
  }
}

// A page of a list (ListSessions, ListEndedSessions, ListContainers) over
// every shard, in `order`, of at most `limit` items and about
// `budget_bytes` of them (0: no byte budget): on each shard's reader,
// `query(db, &q)` readies the list statement, whose rows carry the filters'
// verdict in column `kept`; each shard's walk is CollectPartitionPage's,
// `read(q)` makes a kept row, and MergePartitionPages makes the page.
template <typename Row, typename Query, typename Read>
Status ListOverShards(const std::vector<Shard*>& shards, int kept, int key, int limit,
                      size_t budget_bytes, KeyOrder order, Query query, Read read,
                      std::vector<Row>* page, std::string* next_after) {
  const PageBounds bounds{limit, ListExamineBound(limit), budget_bytes};
  std::vector<PartitionPage<Row>> parts(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    RETURN_IF_ERROR(shards[i]->reads->With([&](Db* db) {
      StatementRef q;
      RETURN_IF_ERROR(query(db, &q));
      return CollectPartitionPage(*q, bounds, kept, key, read, &parts[i]);
    }));
  }
  MergePartitionPages(std::move(parts), bounds, page, next_after, order);
  return Status::Ok();
}

// The same, in key order, for rows that are a row of `columns` then the
// filters' verdict.
template <typename Row, size_t N, typename Query>
Status ListOverShards(const std::vector<Shard*>& shards, const Column<Row> (&columns)[N], int key,
                      int limit, size_t budget_bytes, Query query, std::vector<Row>* page,
                      std::string* next_after) {
  return ListOverShards(
      shards, /*kept=*/static_cast<int>(N), key, limit, budget_bytes, KeyOrder::kAscending, query,
      [&columns](const Statement& row) {
        Row read;
        ReadRow(columns, SqliteCells(row), &read);
        return read;
      },
      page, next_after);
}

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_ROWS_H_
