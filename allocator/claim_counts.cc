#include "allocator/claim_counts.h"

#include "allocator/claim_messages.h"
#include "store/selector.h"

namespace allocator {

using store::Outcome;

ClaimContext ContextOf(const store::ClaimRequest& req, int64_t max_sessions) {
  return ClaimContext{req.caller.tenant,
                      req.region,
                      req.pool,
                      !req.fallback_regions.empty(),
                      max_sessions,
                      req.selector.empty() ? "" : store::SelectorJson(req.selector)};
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
    case Outcome::kUnknownPool:  // its message names the region's pools (the waiting room's)
      stats_->claims_unknown_pool.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::kNoMatch:
      stats_->claims_no_match.fetch_add(1, std::memory_order_relaxed);
      r->message = NoMatchMessage(claim.selector, claim.region, claim.pool, claim.has_fallbacks);
      break;
    default: stats_->claims_error.fetch_add(1, std::memory_order_relaxed); break;
  }
}

void ClaimCounts::CountPoolClaim(const std::string& region, const std::string& pool, bool ok) {
  // A session's pool exists; a refused claim's pool, registered since the
  // mirror's last look, gets no series of its own (unknown pools are
  // answered unknown_pool, counted apart).
  if (!ok && pool_exists_ && !pool_exists_(region, pool)) return;
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
