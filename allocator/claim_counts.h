#ifndef EDGEALLOC_ALLOCATOR_CLAIM_COUNTS_H_
#define EDGEALLOC_ALLOCATOR_CLAIM_COUNTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "allocator/allocator_types.h"
#include "base/mutex.h"
#include "store/types.h"

namespace allocator {

// Of a claim, what its reply's message names.
struct ClaimContext {
  std::string tenant, region, pool;
  bool has_fallbacks = false;
  int64_t max_sessions = store::kUnlimited;  // the quota its tenant is held to
  std::string selector;  // its selector as JSON (store::SelectorJson); "" for none
};
// The context of `req`, held to `max_sessions` (only a quota refusal names it).
ClaimContext ContextOf(const store::ClaimRequest& req, int64_t max_sessions = store::kUnlimited);

// Counts every finished claim (AllocatorStats, and per pool) and words the
// message of a refused one (claim_messages.h): what a plain claim and a
// waiting one have in common. Safe from any thread.
class ClaimCounts {
 public:
  explicit ClaimCounts(AllocatorStats* stats) : stats_(stats) {}
  ClaimCounts(const ClaimCounts&) = delete;
  ClaimCounts& operator=(const ClaimCounts&) = delete;

  // Counts a finished claim and words its message.
  void Finish(const ClaimContext& claim, store::SessionResult* r);

  // The per-pool claim counts so far (at most kMaxCountedPools pools).
  std::map<PoolKey, PoolClaimCounts> PoolClaims() const;
  // Allocator::SetPoolDirectory: set before any claim.
  void SetPoolDirectory(std::function<bool(const std::string&, const std::string&)> exists) {
    pool_exists_ = std::move(exists);
  }

 private:
  void CountPoolClaim(const std::string& region, const std::string& pool, bool ok);

  AllocatorStats* const stats_;
  std::function<bool(const std::string&, const std::string&)> pool_exists_;
  mutable base::Mutex mu_;
  std::map<PoolKey, PoolClaimCounts> pool_claims_ GUARDED_BY(mu_);
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_CLAIM_COUNTS_H_
