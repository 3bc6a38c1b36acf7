#include "server/api/claim_rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace server {

namespace {

// A rate under one a second still lets one claim through now and then.
double BurstOf(double rate) { return std::max(1.0, rate); }

}  // namespace

ClaimRateLimiter::ClaimRateLimiter(const std::map<std::string, store::TenantLimits>& tenants) {
  SetLimits(tenants, Clock::now());
}

void ClaimRateLimiter::SetLimits(const std::map<std::string, store::TenantLimits>& tenants,
                                 Clock::time_point now) {
  const std::shared_ptr<const Buckets> old = buckets_.Load();
  auto next = std::make_shared<Buckets>();
  for (const auto& [tenant, limits] : tenants) {
    if (limits.claims_per_s <= 0) continue;
    auto it = old->find(tenant);
    std::shared_ptr<Bucket> b;
    if (it != old->end()) {
      // Claims may be taking from it now: changed under its lock.
      b = it->second;
      base::MutexLock lock(&b->mu);
      b->RefillLocked(now);
      b->rate = limits.claims_per_s;
      b->burst = BurstOf(limits.claims_per_s);
      b->tokens = std::min(b->tokens, b->burst);
    } else {
      b = std::make_shared<Bucket>();
      base::MutexLock lock(&b->mu);
      b->rate = limits.claims_per_s;
      b->burst = BurstOf(limits.claims_per_s);
      b->tokens = b->burst;
      b->refilled = now;
    }
    next->emplace(tenant, std::move(b));
  }
  buckets_.Store(std::move(next));
}

void ClaimRateLimiter::Bucket::RefillLocked(Clock::time_point now) const {
  if (now <= refilled) return;
  const double seconds = std::chrono::duration<double>(now - refilled).count();
  tokens = std::min(burst, tokens + seconds * rate);
  refilled = now;
}

std::shared_ptr<const ClaimRateLimiter::Bucket> ClaimRateLimiter::Find(
    const std::string& tenant) const {
  const std::shared_ptr<const Buckets> buckets = buckets_.Load();
  auto it = buckets->find(tenant);
  return it == buckets->end() ? nullptr : it->second;
}

bool ClaimRateLimiter::TryTake(const std::string& tenant, Clock::time_point now,
                               int64_t* retry_after_s) {
  const std::shared_ptr<const Bucket> b = Find(tenant);
  if (b == nullptr) return true;
  double wait_s = 0;
  {
    base::MutexLock lock(&b->mu);
    b->RefillLocked(now);
    if (b->tokens >= 1) {
      b->tokens -= 1;
      return true;
    }
    wait_s = (1 - b->tokens) / b->rate;
  }
  b->refused.fetch_add(1, std::memory_order_relaxed);
  *retry_after_s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(wait_s)));
  return false;
}

void ClaimRateLimiter::Refund(const std::string& tenant, Clock::time_point now) {
  const std::shared_ptr<const Bucket> b = Find(tenant);
  if (b == nullptr) return;
  base::MutexLock lock(&b->mu);
  b->RefillLocked(now);
  b->tokens = std::min(b->burst, b->tokens + 1);
}

std::optional<ClaimRateLimiter::Level> ClaimRateLimiter::LevelOf(const std::string& tenant,
                                                                 Clock::time_point now) const {
  const std::shared_ptr<const Bucket> b = Find(tenant);
  if (b == nullptr) return std::nullopt;
  base::MutexLock lock(&b->mu);
  b->RefillLocked(now);
  return Level{b->rate, b->tokens};
}

uint64_t ClaimRateLimiter::RateLimited(const std::string& tenant) const {
  const std::shared_ptr<const Bucket> b = Find(tenant);
  return b == nullptr ? 0 : b->refused.load(std::memory_order_relaxed);
}

}  // namespace server
