#ifndef EDGEALLOC_STORE_LIST_PAGE_H_
#define EDGEALLOC_STORE_LIST_PAGE_H_

// How an engine makes one page of a list (Storage::ListSessions,
// ListContainers) out of what each of its partitions examined: each walks its
// rows in key order after the cursor, examines at most ListExamineBound(limit)
// of them, and keeps those the filters match (its hits). The page is every
// hit up to the first place any partition stopped: beyond it a partition
// that stopped early may hold hits not seen yet, so the next page resumes
// there and nothing is skipped. Header-only: the engines' own code, shared.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/types.h"

namespace store {

// What one partition examined for a page.
template <typename Row>
struct PartitionPage {
  // The rows the filters matched (in any order).
  std::vector<Row> hits;
  // Set when the partition stopped before its last row (the bound, or
  // limit + 1 hits): the last key it examined. Every row of the partition
  // after the cursor and up to it was examined, and its matches are in hits.
  std::optional<std::string> stopped_at;
};

// The order a list pages in, by its key: the first page starts at the
// smallest key, or at the largest (the newest, for ended sessions).
enum class KeyOrder { kAscending, kDescending };

// Merges the partitions' pages into *page (at most `limit` rows in `order`
// of their keys) and *next_after (where the next page starts; empty: nothing
// can follow). `key` gives a row's key (std::string, compared as bytes).
template <typename Row, typename KeyOf>
void MergePartitionPages(std::vector<PartitionPage<Row>> parts, int limit, KeyOf key,
                         KeyOrder order, std::vector<Row>* page, std::string* next_after) {
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
  if (page->size() > static_cast<size_t>(limit)) {
    page->resize(static_cast<size_t>(limit));
    *next_after = key(page->back());
  } else if (stop) {
    *next_after = std::move(*stop);
  }
}

// The keys the lists page by: a session's id, a container's id.
inline const std::string& ListKey(const Session& s) { return s.session_id; }
inline const std::string& ListKey(const ContainerInfo& c) { return c.id; }
inline const std::string& ListKey(const EndedSession& e) { return e.session.session_id; }

// MergePartitionPages by ListKey.
template <typename Row>
void MergePartitionPages(std::vector<PartitionPage<Row>> parts, int limit, std::vector<Row>* page,
                         std::string* next_after, KeyOrder order = KeyOrder::kAscending) {
  MergePartitionPages(
      std::move(parts), limit, [](const Row& row) -> const std::string& { return ListKey(row); },
      order, page, next_after);
}

}  // namespace store

#endif  // EDGEALLOC_STORE_LIST_PAGE_H_
