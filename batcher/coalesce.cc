#include "batcher/coalesce.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace batcher {

namespace {

// The one rule of folding, for a batch's rows and a request's items alike:
// `h` joins its container's newest `row` only when neither carries a state
// and both carry a ts_ms or both do not (coalesce.h says why).
template <typename Row>
bool Joins(const Row& row, const Heartbeat& h) {
  return h.state == store::ReportedState::kNone && row.state == store::ReportedState::kNone &&
         h.ts_ms.has_value() == row.ts_ms.has_value();
}

// Folds `h` into `row` as writing it after the row would: liveness always,
// the report only unless it is older than the row's.
template <typename Row>
void Fold(const Heartbeat& h, Row* row) {
  row->accepted_ms = std::max(row->accepted_ms, h.accepted_ms);
  row->learn_region = row->learn_region || h.learn_region;
  if (h.ts_ms && *h.ts_ms < *row->ts_ms) return;  // older report: liveness only
  if (h.ts_ms) row->ts_ms = h.ts_ms;
  if (h.load) row->load = h.load;
}

}  // namespace

uint64_t Coalesce(Heartbeat* items, size_t n, Scratch* scratch) {
  std::vector<store::HeartbeatRow>& rows = scratch->rows;
  auto& index = scratch->index;  // id -> that container's newest row
  assert(rows.capacity() >= n);
  rows.clear();
  index.clear();
  uint64_t coalesced = 0;
  for (size_t i = 0; i < n; ++i) {
    Heartbeat& h = items[i];
    auto it = index.find(std::string_view(h.container_id));
    if (it == index.end() || !Joins(rows[it->second], h)) {
      rows.push_back(
          {std::move(h.container_id), h.accepted_ms, h.ts_ms, h.load, h.state, h.learn_region});
      if (it == index.end()) {
        index.emplace(std::string_view(rows.back().container_id), rows.size() - 1);
      } else {
        it->second = rows.size() - 1;  // the key still views the first row's id
      }
      continue;
    }
    ++coalesced;
    Fold(h, &rows[it->second]);
  }
  return coalesced;
}

size_t CoalesceReports(std::vector<Heartbeat>* items) {
  std::vector<Heartbeat> kept;
  kept.reserve(items->size());  // never moves: the index views kept[i].container_id
  std::unordered_map<std::string_view, size_t> index;  // id -> its newest kept item
  for (Heartbeat& h : *items) {
    auto it = index.find(std::string_view(h.container_id));
    if (it != index.end() && Joins(kept[it->second], h)) {
      Fold(h, &kept[it->second]);
      continue;
    }
    kept.push_back(std::move(h));
    if (it == index.end()) {
      index.emplace(std::string_view(kept.back().container_id), kept.size() - 1);
    } else {
      it->second = kept.size() - 1;  // the key still views the first item's id
    }
  }
  const size_t folded = items->size() - kept.size();
  *items = std::move(kept);
  return folded;
}

}  // namespace batcher
