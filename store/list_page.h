#ifndef EDGEALLOC_STORE_LIST_PAGE_H_
#define EDGEALLOC_STORE_LIST_PAGE_H_

// How an engine makes one page of a list (Storage::ListSessions,
// ListContainers) out of what each of its partitions examined: each walks its
// rows in key order after the cursor, examines at most ListExamineBound(limit)
// of them, and keeps those the filters match (its hits), up to limit + 1 hits
// or a byte budget of them. The page is every hit up to the first place any
// partition stopped: beyond it a partition that stopped early may hold hits
// not seen yet, so the next page resumes there and nothing is skipped.
// Header-only: the engines' own code, shared.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/row_columns.h"
#include "store/types.h"

namespace store {

// The keys the lists page by: a session's id, a container's id.
inline const std::string& ListKey(const Session& s) { return s.session_id; }
inline const std::string& ListKey(const ContainerInfo& c) { return c.id; }
inline const std::string& ListKey(const EndedSession& e) { return e.session.session_id; }

// How big a list takes a row to be against a page's byte budget: the bytes of
// its texts (RowTextBytes), not its JSON. That is never more than the JSON a
// reply makes of it, so a page the storage ends at the budget holds at least
// what the server sends of it (which ends its page at the budget of JSON,
// server/api/list_pages.h) and never much more: a conservative measure that
// needs nothing of the reply's format.
inline size_t ListRowBytes(const Session& s) { return RowTextBytes(kSessionColumns, s); }
inline size_t ListRowBytes(const ContainerInfo& c) { return RowTextBytes(kContainerColumns, c); }
inline size_t ListRowBytes(const EndedSession& e) {
  return RowTextBytes(kSessionColumns, e.session) + e.end.reason.size();
}

// How far one page reaches: at most `limit` items, each partition examining
// at most `examine` rows (ListExamineBound(limit)), and the items' bytes
// (ListRowBytes) at most about `budget_bytes`: the item that reaches it is
// the page's last, so a page holds at least one and paging moves on. 0: no
// byte budget.
struct PageBounds {
  int limit = 0;
  int64_t examine = 0;
  size_t budget_bytes = 0;
};

// What one partition examined for a page.
template <typename Row>
struct PartitionPage {
  // The rows the filters matched (in any order).
  std::vector<Row> hits;
  // Set when the partition stopped before its last row (the bound, limit + 1
  // hits, or hits reaching the byte budget): the last key it examined. Every
  // row of the partition after the cursor and up to it was examined, and its
  // matches are in hits.
  std::optional<std::string> stopped_at;
  // How many rows the walk examined, and the bytes of its hits.
  int64_t examined = 0;
  size_t hit_bytes = 0;
};

// One step of a partition's walk in key order: counts one examined row and
// keeps `hit` (the row, when the filters matched it). True when the walk
// stops after this row (its key is then *part's stopped_at): the `examine`-th
// row, the limit + 1-th hit (one more than a page says a next page exists),
// or the hit that brings the hits' bytes to the budget. The engine that reads
// its rows one by one walks with it (store/sqlite/rows.h), so it never reads
// a row past the budget; PostgreSQL, which hands a statement's rows over
// whole, walks the same way in its list statements' SQL
// (store/postgres/session_sql.h).
template <typename Row>
bool WalkStopsAfter(const PageBounds& bounds, std::optional<Row> hit, PartitionPage<Row>* part) {
  ++part->examined;
  if (hit) {
    part->hit_bytes += ListRowBytes(*hit);
    part->hits.push_back(std::move(*hit));
  }
  return part->examined >= bounds.examine ||
         part->hits.size() > static_cast<size_t>(bounds.limit) ||
         (bounds.budget_bytes > 0 && part->hit_bytes >= bounds.budget_bytes);
}

// The order a list pages in, by its key: the first page starts at the
// smallest key, or at the largest (the newest, for ended sessions).
enum class KeyOrder { kAscending, kDescending };

// Merges the partitions' pages into *page (the hits in `order` of their
// keys, at most bounds.limit of them and up to the one that brings their
// bytes to bounds.budget_bytes) and *next_after (where the next page starts;
// empty: nothing can follow). `key` gives a row's key (std::string, compared
// as bytes).
template <typename Row, typename KeyOf>
void MergePartitionPages(std::vector<PartitionPage<Row>> parts, const PageBounds& bounds,
                         KeyOf key, KeyOrder order, std::vector<Row>* page,
                         std::string* next_after) {
  page->clear();
  next_after->clear();
  const auto before = [order](const std::string& a, const std::string& b) {
    return order == KeyOrder::kAscending ? a < b : b < a;
  };
  std::optional<std::string> stop;  // the first stopping point in `order`
  for (const auto& part : parts) {
    if (part.stopped_at && (!stop || before(*part.stopped_at, *stop))) stop = part.stopped_at;
  }
  for (auto& part : parts) {
    for (auto& row : part.hits) {
      // A hit past `stop` is left for a later page: another partition may
      // have rows before it that were not examined yet.
      if (stop && before(*stop, key(row))) continue;
      page->push_back(std::move(row));
    }
  }
  std::sort(page->begin(), page->end(),
            [&](const Row& a, const Row& b) { return before(key(a), key(b)); });
  // Several partitions may each bring up to the budget: the page ends at
  // the hit that brings the merged page to it.
  size_t end = std::min(page->size(), static_cast<size_t>(bounds.limit));
  if (bounds.budget_bytes > 0) {
    size_t bytes = 0;
    for (size_t i = 0; i < end; ++i) {
      bytes += ListRowBytes((*page)[i]);
      if (bytes >= bounds.budget_bytes) end = i + 1;
    }
  }
  if (page->size() > end) {
    page->resize(end);
    *next_after = key(page->back());
  } else if (stop) {
    *next_after = std::move(*stop);
  }
}

// MergePartitionPages by ListKey.
template <typename Row>
void MergePartitionPages(std::vector<PartitionPage<Row>> parts, const PageBounds& bounds,
                         std::vector<Row>* page, std::string* next_after,
                         KeyOrder order = KeyOrder::kAscending) {
  MergePartitionPages(
      std::move(parts), bounds, [](const Row& row) -> const std::string& { return ListKey(row); },
      order, page, next_after);
}

}  // namespace store

#endif  // EDGEALLOC_STORE_LIST_PAGE_H_
