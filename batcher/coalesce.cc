#include "batcher/coalesce.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace batcher {

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
    const bool joins = it != index.end() && h.state == store::ReportedState::kNone &&
                       rows[it->second].state == store::ReportedState::kNone &&
                       h.ts_ms.has_value() == rows[it->second].ts_ms.has_value();
    if (!joins) {
      rows.push_back({std::move(h.container_id), h.accepted_ms, h.ts_ms, h.load, h.state});
      if (it == index.end()) {
        index.emplace(std::string_view(rows.back().container_id), rows.size() - 1);
      } else {
        it->second = rows.size() - 1;  // the key still views the first row's id
      }
      continue;
    }
    ++coalesced;
    store::HeartbeatRow& row = rows[it->second];
    row.accepted_ms = std::max(row.accepted_ms, h.accepted_ms);
    if (h.ts_ms && *h.ts_ms < *row.ts_ms) continue;  // older report: liveness only
    if (h.ts_ms) row.ts_ms = h.ts_ms;
    if (h.load) row.load = h.load;
  }
  return coalesced;
}

}  // namespace batcher
