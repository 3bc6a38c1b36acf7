#ifndef EDGEALLOC_BATCHER_COALESCE_H_
#define EDGEALLOC_BATCHER_COALESCE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "batcher/heartbeat.h"
#include "store/types.h"

namespace batcher {

// A batch's rows and the index that folds them, kept by its lane from one
// batch to the next so that a batch allocates nothing once the lane is warm
// (ids longer than the small-string buffer aside). Touched only by the lane's
// batching thread.
struct Scratch {
  std::vector<store::HeartbeatRow> rows;
  std::unordered_map<std::string_view, size_t> index;  // keys view rows[i].container_id
};

// Folds items[0..n) into scratch->rows in queue order, so that writing the
// rows one after another ends exactly as writing the items one after another
// would (the batch's bounds then never change an outcome). An item joins its
// container's newest row only when neither carries a state and both carry a
// ts_ms or both do not: such reports differ only in liveness, load and
// ts_ms, which fold as the statements would apply them (an item older than
// the row's ts_ms changes nothing but liveness). A state report, or a change
// between reports with and without ts_ms, starts a new row, since its
// outcome depends on what the rows before it left (a `draining` after `dead`
// is not a `draining` alone; a report without ts_ms is current, one with an
// old ts_ms is not). last_heartbeat_ms is the newest accepted_ms of a row's
// items. Moves the ids out of the items. Returns the items folded away.
// REQUIRES: scratch->rows.capacity() >= n (the index views the rows' ids in place).
uint64_t Coalesce(Heartbeat* items, size_t n, Scratch* scratch);

// Folds a request's items by the same rule, before they are queued: an item
// joins its container's newest kept item as it would join its row, so the
// batch that later takes them writes what it would have written from all of
// them. What is kept stays in request order. Returns the items folded away.
size_t CoalesceReports(std::vector<Heartbeat>* items);

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_COALESCE_H_
