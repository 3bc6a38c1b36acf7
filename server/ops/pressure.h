#ifndef EDGEALLOC_SERVER_OPS_PRESSURE_H_
#define EDGEALLOC_SERVER_OPS_PRESSURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "allocator/allocator.h"
#include "batcher/batcher.h"
#include "kvmirror/snapshot.h"
#include "kvmirror/warm_buffer.h"

namespace server {

// What GET /v1/pressure tells of one pool besides the mirror's counts.
struct PoolPressure {
  int64_t waiting = 0;                       // claims waiting for it now
  std::optional<double> claims_per_s;        // sessions handed out, the fleet's
  std::optional<double> no_capacity_per_s;   // claims refused no_capacity, the fleet's
  int64_t heartbeat_lag_ms = 0;
  kvmirror::WarmBuffer warm_buffer;
};

// The lag of the heartbeats of `region` this node accepted and has not yet
// written: the longest of its storage partitions' (Batcher::LagMs), 0
// without a batcher.
int64_t HeartbeatLagMs(const batcher::Batcher* batcher, std::string_view region);

// The fleet's claim rates of one pool: the rise of its counts between the
// allocator's earlier and latest read of the fleet's claim counts, a
// second; unset while there are no two reads (or no allocator).
void FleetClaimRates(const allocator::Allocator* allocator, std::string_view region,
                     std::string_view pool, PoolPressure* out);

// The body of GET /v1/pressure (docs/api.md, "Pressure") for `counts`, the
// pool's in `snap`, on one line: every count is the snapshot's, as
// /v1/capacity of the same version shows it.
std::string PressureJson(const kvmirror::Snapshot& snap, int64_t now_ms, std::string_view region,
                         std::string_view pool, const kvmirror::StatusCounts& counts,
                         const PoolPressure& pressure);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_PRESSURE_H_
