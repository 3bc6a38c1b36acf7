#ifndef EDGEALLOC_ALLOCATOR_FLEET_CLAIMS_H_
#define EDGEALLOC_ALLOCATOR_FLEET_CLAIMS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <stop_token>
#include <thread>

#include "allocator/allocator_types.h"
#include "allocator/claim_counts.h"
#include "base/mutex.h"
#include "store/storage.h"

namespace allocator {

// The fleet's claim counts as one read of them found them.
struct FleetClaimsSnapshot {
  store::FleetClaimCounts counts;  // totals under an empty region and pool
  int64_t as_of_ms = 0;            // when read, this node's clock; 0: never read
};

// The claim counts of every node on the database, so that a dashboard shows
// the fleet's claim rates, not one node's (docs/api.md, GET
// /v1/capacity/claims). A thread that, every options->claims_publish_ms,
// publishes this node's counts since it started (its totals, under an empty
// region and pool, and by pool) as options->node_id's, then reads the sums of
// the nodes that published within kFleetClaimWindowMs, which Current hands
// to any thread. Nothing on the claim path: it copies the counters. A node
// restarted under a new id is summed twice until its old id's last publish
// leaves the window; then the sums go down once (a counter reset).
class FleetClaims {
 public:
  // The storage, options, stats and claims must outlive it.
  FleetClaims(store::Storage* storage, const AllocatorOptions* options,
              const AllocatorStats* stats, const ClaimCounts* claims);
  FleetClaims(const FleetClaims&) = delete;
  FleetClaims& operator=(const FleetClaims&) = delete;
  ~FleetClaims() { Stop(); }

  // Starts the thread, unless options->claims_publish_ms is 0 or
  // options->node_id empty. Not from two threads at once.
  void Start();
  void Stop();  // returns once the thread ended

  // Publishes and reads once, now (the thread does this; tests may too).
  // A failure leaves Current as it was (its as_of_ms tells how old).
  store::Status Refresh();
  std::shared_ptr<const FleetClaimsSnapshot> Current() const;
  // The oldest read of the last kFleetClaimsEarlierMs (at most
  // kMaxEarlierReads reads back), or null when there is none before Current:
  // with it a dashboard has a rate from its first look.
  std::shared_ptr<const FleetClaimsSnapshot> Earlier() const;

  static constexpr int64_t kFleetClaimsEarlierMs = 15000;
  static constexpr size_t kMaxEarlierReads = 16;

 private:
  void Loop(std::stop_token stop);

  store::Storage* const storage_;
  const AllocatorOptions* const options_;
  const AllocatorStats* const stats_;
  const ClaimCounts* const claims_;
  mutable base::Mutex mu_;
  // The reads of the last kFleetClaimsEarlierMs, oldest first; the last is
  // Current's. Never empty.
  std::deque<std::shared_ptr<const FleetClaimsSnapshot>> reads_ GUARDED_BY(mu_);
  std::jthread thread_;  // its stop request wakes it from its sleep
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_FLEET_CLAIMS_H_
