#include "server/api/claim_rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace server {

ClaimRateLimiter::ClaimRateLimiter(const std::map<std::string, store::TenantLimits>& tenants) {
  const Clock::time_point now = Clock::now();
  for (const auto& [tenant, limits] : tenants) {
    if (limits.claims_per_s <= 0) continue;
    auto b = std::make_unique<Bucket>();
    b->rate = limits.claims_per_s;
    // A rate under one a second still lets one claim through now and then.
    b->burst = std::max(1.0, limits.claims_per_s);
    base::MutexLock lock(&b->mu);
    b->tokens = b->burst;
    b->refilled = now;
    buckets_.emplace(tenant, std::move(b));
  }
}

void ClaimRateLimiter::Bucket::RefillLocked(Clock::time_point now) const {
  if (now <= refilled) return;
  const double seconds = std::chrono::duration<double>(now - refilled).count();
  tokens = std::min(burst, tokens + seconds * rate);
  refilled = now;
}

const ClaimRateLimiter::Bucket* ClaimRateLimiter::Find(const std::string& tenant) const {
  auto it = buckets_.find(tenant);
  return it == buckets_.end() ? nullptr : it->second.get();
}

bool ClaimRateLimiter::TryTake(const std::string& tenant, Clock::time_point now,
                               int64_t* retry_after_s) {
  const Bucket* b = Find(tenant);
  if (b == nullptr) return true;
  double missing = 0;
  {
    base::MutexLock lock(&b->mu);
    b->RefillLocked(now);
    if (b->tokens >= 1) {
      b->tokens -= 1;
      return true;
    }
    missing = 1 - b->tokens;
  }
  b->refused.fetch_add(1, std::memory_order_relaxed);
  *retry_after_s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(missing / b->rate)));
  return false;
}

void ClaimRateLimiter::Refund(const std::string& tenant, Clock::time_point now) {
  const Bucket* b = Find(tenant);
  if (b == nullptr) return;
  base::MutexLock lock(&b->mu);
  b->RefillLocked(now);
  b->tokens = std::min(b->burst, b->tokens + 1);
}

std::optional<ClaimRateLimiter::Level> ClaimRateLimiter::LevelOf(const std::string& tenant,
                                                                 Clock::time_point now) const {
  const Bucket* b = Find(tenant);
  if (b == nullptr) return std::nullopt;
  base::MutexLock lock(&b->mu);
  b->RefillLocked(now);
  return Level{b->rate, b->tokens};
}

uint64_t ClaimRateLimiter::RateLimited(const std::string& tenant) const {
  const Bucket* b = Find(tenant);
  return b == nullptr ? 0 : b->refused.load(std::memory_order_relaxed);
}

}  // namespace server
