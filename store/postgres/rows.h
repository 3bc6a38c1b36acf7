#ifndef EDGEALLOC_STORE_POSTGRES_ROWS_H_
#define EDGEALLOC_STORE_POSTGRES_ROWS_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "store/list_page.h"
#include "store/postgres/pg.h"
#include "store/row_columns.h"
#include "store/types.h"

namespace store {

// The list walk's three parameters (store/postgres/list_sql.h ListWalk),
// which every list statement takes in this order: the hits wanted (the
// page's limit and one more, to know a next page exists), the examine bound
// and the byte budget.
inline std::vector<PgParam> WithWalkParams(std::vector<PgParam> params, const PageBounds& bounds) {
  params.push_back(P(static_cast<int64_t>(bounds.limit) + 1));
  params.push_back(P(bounds.examine));
  params.push_back(P(static_cast<int64_t>(bounds.budget_bytes)));
  return params;
}

// The cells of one row of a result, as ReadRow (store/row_columns.h) reads
// them: results come as text, booleans as "t" or "f".
class PgCells {
 public:
  PgCells(const PgResult& r, int row) : r_(r), row_(row) {}
  bool IsNull(int col) const { return r_.IsNull(row_, col); }
  std::string_view Text(int col) const { return r_.Text(row_, col); }
  int64_t Int64(int col) const { return r_.Int64(row_, col); }
  bool Bool(int col) const { return r_.Text(row_, col) == "t"; }

 private:
  const PgResult& r_;
  const int row_;
};

// Reads the session row (kSessionColumnList) that starts row `row` of `r`.
void ReadSessionRow(const PgResult& r, int row, Session* s);
// Reads the container row (kContainerColumnList) that starts row `row`.
void ReadContainerRow(const PgResult& r, int row, ContainerInfo* c);

// A list statement's rows (kListSessions, kListEndedSessions,
// kListContainers) as the one partition's share of a page: a row whose
// column `kept` is true is a hit, which `read(r, i)` makes; the one whose is
// false carries the last key examined in the column after that.
template <typename Row, typename Read>
std::vector<PartitionPage<Row>> ListedPage(const PgResult& r, int kept, Read read) {
  PartitionPage<Row> part;
  for (int i = 0; i < r.rows(); ++i) {
    if (r.Text(i, kept) != "t") {
      part.stopped_at = r.String(i, kept + 1);
      continue;
    }
    part.hits.push_back(read(r, i));
  }
  std::vector<PartitionPage<Row>> parts;
  parts.push_back(std::move(part));
  return parts;
}

// The same for rows that are a row of `columns` then the verdict.
template <typename Row, size_t N>
std::vector<PartitionPage<Row>> ListedPage(const PgResult& r, const Column<Row> (&columns)[N]) {
  return ListedPage<Row>(r, static_cast<int>(N), [&columns](const PgResult& res, int i) {
    Row row;
    ReadRow(columns, PgCells(res, i), &row);
    return row;
  });
}

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_ROWS_H_
