#ifndef EDGEALLOC_BATCHER_HEARTBEAT_H_
#define EDGEALLOC_BATCHER_HEARTBEAT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "store/types.h"

namespace batcher {

// A heartbeat's region_index while its container's region is not known
// (RegionCache).
inline constexpr int kUnknownRegion = -1;

// A Heartbeat is one validated report of a container (docs/api.md "Heartbeats"),
// as the HTTP handler hands it to the Batcher. A plain value: it is moved into
// a queue on the io thread and read by the shard's batching thread.
struct Heartbeat {
  // The state a container reports about itself (store::ReportedState).
  using State = store::ReportedState;

  std::string container_id;
  // The container's own clock. Only orders this container's reports: one
  // older than the newest already taken changes nothing but liveness. Absent:
  // counts as current.
  std::optional<int64_t> ts_ms;
  std::optional<double> load;
  State state = State::kNone;
  // The server's clock (ms since the epoch) when the request was accepted;
  // liveness (last_heartbeat_ms) is judged by it, never by ts_ms.
  int64_t accepted_ms = 0;
  // The container's region as the batcher's RegionCache knew it when it took
  // the heartbeat (its lag counts there: Batcher::RegionLagMs), or
  // kUnknownRegion; and whether its write is to name the region
  // (store::HeartbeatRow::learn_region).
  int region_index = kUnknownRegion;
  bool learn_region = true;
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_HEARTBEAT_H_
