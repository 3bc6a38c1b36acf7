#include "allocator/fleet_claims.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

#include "base/clock.h"

namespace allocator {

// A publish is bounded: every pool counted one by one, and the totals.
static_assert(kMaxCountedPools + 1 <= store::kMaxPublishedTallies);

FleetClaims::FleetClaims(store::Storage* storage, const AllocatorOptions* options,
                         const AllocatorStats* stats, const ClaimCounts* claims)
    : storage_(storage),
      options_(options),
      stats_(stats),
      claims_(claims),
      reads_{std::make_shared<const FleetClaimsSnapshot>()} {}

void FleetClaims::Start() {
  if (options_->claims_publish_ms <= 0 || options_->node_id.empty()) return;
  if (!thread_.joinable()) {
    thread_ = std::jthread([this](std::stop_token stop) { Loop(std::move(stop)); });
  }
}

void FleetClaims::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

store::Status FleetClaims::Refresh() {
  std::vector<store::PoolClaimTally> mine;
  mine.push_back({"", "",
                  static_cast<int64_t>(stats_->claims_ok.load(std::memory_order_relaxed)),
                  static_cast<int64_t>(stats_->claims_no_capacity.load(std::memory_order_relaxed))});
  for (const auto& [key, c] : claims_->PoolClaims()) {
    mine.push_back({key.first, key.second, static_cast<int64_t>(c.ok),
                    static_cast<int64_t>(c.no_capacity)});
  }
  // Rows of nodes silent for longer than the window count for nothing.
  RETURN_IF_ERROR(storage_->PublishClaimCounts(options_->node_id, mine, kFleetClaimWindowMs,
                                               kMaxPrunedClaimRows));
  auto next = std::make_shared<FleetClaimsSnapshot>();
  RETURN_IF_ERROR(storage_->ReadFleetClaimCounts(kFleetClaimWindowMs, &next->counts));
  next->as_of_ms = base::NowMs();
  base::MutexLock lock(&mu_);
  if (reads_.back()->as_of_ms == 0) reads_.clear();  // the empty one before the first read
  reads_.push_back(std::move(next));
  while (reads_.size() > kMaxEarlierReads ||
         (reads_.size() > 1 &&
          reads_.front()->as_of_ms < reads_.back()->as_of_ms - kFleetClaimsEarlierMs)) {
    reads_.pop_front();
  }
  return store::Status::Ok();
}

std::shared_ptr<const FleetClaimsSnapshot> FleetClaims::Current() const {
  base::MutexLock lock(&mu_);
  return reads_.back();
}

std::shared_ptr<const FleetClaimsSnapshot> FleetClaims::Earlier() const {
  base::MutexLock lock(&mu_);
  return reads_.size() > 1 ? reads_.front() : nullptr;
}

void FleetClaims::Loop(std::stop_token stop) {
  // The mutex only serves the wait, which a stop request ends at once.
  std::mutex mu;
  std::condition_variable_any cv;
  const auto interval = std::chrono::milliseconds(options_->claims_publish_ms);
  for (;;) {
    (void)Refresh();  // a failure is retried at the next period; as_of_ms ages meanwhile
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, interval, [] { return false; });
    if (stop.stop_requested()) return;
  }
}

}  // namespace allocator
