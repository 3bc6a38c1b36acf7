#ifndef EDGEALLOC_STORE_SQLITE_ROWS_H_
#define EDGEALLOC_STORE_SQLITE_ROWS_H_

#include <cstdint>
#include <utility>

#include "store/list_page.h"
#include "store/sqlite/db.h"
#include "store/types.h"

namespace store {

// Reads a session row, columns 0..5 in lifecycle_sql.h's order (id, region,
// pool, generation, lease_expires_at_ms, data), into *s; the session id is
// not among them and is left as it is.
void ReadSessionRow(const Statement& q, Session* s);
// Binds `value`, or NULL when it is empty (a filter that matches anything).
void BindOrNull(Statement* q, int index, const std::string& value);

// Reads a kGetContainer row into *c.
void ReadContainerRow(const Statement& q, ContainerInfo* c);

// One partition's share of a list page (ListSessions, ListContainers): steps
// `q`, whose rows come in key order with column `kept` 1 where the filters
// keep the row and column `key` its key, until the rows run out, `bound`
// rows were examined, or limit + 1 were kept; `read(q)` makes a kept row.
template <typename Row, typename Read>
Status CollectPartitionPage(Statement& q, int64_t bound, int limit, int kept, int key,
                            Read read, PartitionPage<Row>* part) {
  for (int64_t examined = 0;;) {
    bool row = false;
    RETURN_IF_ERROR(q.Step(&row));
    if (!row) return Status::Ok();
    ++examined;
    if (q.ColumnInt64(kept) != 0) part->hits.push_back(read(q));
    if (examined == bound || part->hits.size() > static_cast<size_t>(limit)) {
      part->stopped_at = q.ColumnString(key);
      return Status::Ok();
    }
  }
}

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_ROWS_H_
