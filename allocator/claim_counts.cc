#include "allocator/claim_counts.h"

#include "allocator/claim_messages.h"

namespace allocator {

using store::Outcome;

ClaimContext ContextOf(const store::ClaimRequest& req, int64_t max_sessions) {
  return ClaimContext{req.caller.tenant, req.region, req.pool, !req.fallback_regions.empty(),
                      max_sessions};
}

void ClaimCounts::Finish(const ClaimContext& claim, store::SessionResult* r) {
  switch (r->outcome) {
    case Outcome::kOk:
      stats_->claims_ok.fetch_add(1, std::memory_order_relaxed);
      CountPoolClaim(r->session.region, r->session.pool, true);
      break;
    case Outcome::kReplayed:
      stats_->claims_replayed.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::kQuotaExceeded:
      stats_->claims_quota.fetch_add(1, std::memory_order_relaxed);
      r->message = QuotaExceededMessage(claim.tenant, claim.max_sessions);
      break;
    case Outcome::kNoCapacity:
      stats_->claims_no_capacity.fetch_add(1, std::memory_order_relaxed);
      CountPoolClaim(claim.region, claim.pool, false);
      r->message = NoCapacityMessage(claim.region, claim.pool, claim.has_fallbacks);
      break;
    default: stats_->claims_error.fetch_add(1, std::memory_order_relaxed); break;
  }
}

void ClaimCounts::CountPoolClaim(const std::string& region, const std::string& pool, bool ok) {
  // A session's pool exists; a refused claim may name any made-up one.
  if (!ok && pool_exists_ && !pool_exists_(region, pool)) {
    stats_->claims_unknown_pool.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  base::MutexLock lock(&mu_);
  auto it = pool_claims_.find(PoolKey(region, pool));
  if (it == pool_claims_.end()) {
    if (pool_claims_.size() >= kMaxCountedPools) return;
    it = pool_claims_.emplace(PoolKey(region, pool), PoolClaimCounts{}).first;
  }
  ++(ok ? it->second.ok : it->second.no_capacity);
}

std::map<PoolKey, PoolClaimCounts> ClaimCounts::PoolClaims() const {
  base::MutexLock lock(&mu_);
  return pool_claims_;
}

}  // namespace allocator
