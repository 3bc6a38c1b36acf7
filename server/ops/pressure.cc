#include "server/ops/pressure.h"

#include <algorithm>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace server {
namespace {

// The pool's line of one read of the fleet's claim counts, or null.
const store::PoolClaimTally* TallyOf(const allocator::FleetClaimsSnapshot& read,
                                     std::string_view region, std::string_view pool) {
  for (const store::PoolClaimTally& t : read.counts.pools) {
    if (t.region == region && t.pool == pool) return &t;
  }
  return nullptr;
}

nlohmann::ordered_json RateOrNull(const std::optional<double>& rate) {
  return rate.has_value() ? nlohmann::ordered_json(*rate) : nlohmann::ordered_json();
}

}  // namespace

// The region's lag as its backup routing sees it (Batcher::RegionLagMs).
int64_t HeartbeatLagMs(const batcher::Batcher* batcher, std::string_view region) {
  return batcher == nullptr ? 0 : batcher->RegionLagMs(std::string(region));
}

void FleetClaimRates(const allocator::Allocator* allocator, std::string_view region,
                     std::string_view pool, PoolPressure* out) {
  if (allocator == nullptr) return;
  const auto latest = allocator->FleetClaimCounts();
  const auto earlier = allocator->EarlierFleetClaimCounts();
  if (latest == nullptr || earlier == nullptr || earlier->as_of_ms == 0) return;
  const int64_t span_ms = latest->as_of_ms - earlier->as_of_ms;
  if (span_ms <= 0) return;
  const store::PoolClaimTally* now = TallyOf(*latest, region, pool);
  const store::PoolClaimTally* then = TallyOf(*earlier, region, pool);
  // A pool absent from a read had no claims counted yet; a count that went
  // down (a node's counts left the window) is no rate below zero.
  const auto rise = [span_ms](int64_t now_count, int64_t then_count) {
    return static_cast<double>(std::max<int64_t>(0, now_count - then_count)) * 1000.0 /
           static_cast<double>(span_ms);
  };
  out->claims_per_s = rise(now ? now->ok : 0, then ? then->ok : 0);
  out->no_capacity_per_s = rise(now ? now->no_capacity : 0, then ? then->no_capacity : 0);
}

std::string PressureJson(const kvmirror::Snapshot& snap, int64_t now_ms, std::string_view region,
                         std::string_view pool, const kvmirror::StatusCounts& counts,
                         const PoolPressure& pressure) {
  // Ordered: the body reads in the order docs/api.md shows it.
  nlohmann::ordered_json body = {
      {"region", std::string(region)},
      {"pool", std::string(pool)},
      {"as_of_ms", snap.as_of_ms()},
      {"age_ms", snap.AgeMs(now_ms)},
      {"version", snap.version()},
      {"available", counts.available},
      {"picked", counts.picked},
      {"draining", counts.draining},
      {"drained", counts.drained},
      {"dead", counts.dead},
      {"slots", counts.slots},
      {"slots_used", counts.slots_used},
      {"slots_free", counts.slots_free},
      {"waiting", pressure.waiting},
      {"claims_per_s", RateOrNull(pressure.claims_per_s)},
      {"no_capacity_per_s", RateOrNull(pressure.no_capacity_per_s)},
      {"heartbeat_lag_ms", pressure.heartbeat_lag_ms},
      {"warm_buffer", pressure.warm_buffer.ToString()},
      {"buffer_slots", kvmirror::WantedFreeSlots(pressure.warm_buffer, counts)},
      {"recommended_buffer",
       kvmirror::RecommendedBuffer(pressure.warm_buffer, counts, pressure.waiting)},
  };
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace server
