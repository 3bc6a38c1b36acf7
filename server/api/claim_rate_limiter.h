#ifndef EDGEALLOC_SERVER_API_CLAIM_RATE_LIMITER_H_
#define EDGEALLOC_SERVER_API_CLAIM_RATE_LIMITER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/mutex.h"
#include "base/shared_slot.h"
#include "store/types.h"

namespace server {

// A ClaimRateLimiter holds a token bucket for each tenant whose keys-file
// line gives claims_per_s (docs/api.md "Per-tenant limits"): it refills at that
// rate up to a burst of the same number of claims (at least one), and each
// claim takes a token before it reaches the allocator. Tenants without a
// rate have no bucket and are never limited, so its memory is bounded by
// the keys file, never by the names clients send. The rate is this node's:
// on PostgreSQL each node of a fleet keeps its own buckets.
// Safe from any thread: each bucket has its own lock, held for a few
// arithmetic operations; the set of buckets is replaced whole (SetLimits).
class ClaimRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // A bucket, full, for each tenant of `tenants` with claims_per_s > 0.
  explicit ClaimRateLimiter(const std::map<std::string, store::TenantLimits>& tenants);
  ClaimRateLimiter(const ClaimRateLimiter&) = delete;
  ClaimRateLimiter& operator=(const ClaimRateLimiter&) = delete;

  // The keys file was reloaded: a tenant whose rate is unchanged keeps its
  // bucket as it is; one whose rate changed keeps its tokens (at most the
  // new burst) and its count of refusals; a new tenant gets a full bucket; a
  // tenant without a rate now has none. Claims may be taken meanwhile.
  void SetLimits(const std::map<std::string, store::TenantLimits>& tenants,
                 Clock::time_point now);

  // Takes one token of `tenant`'s bucket at `now`. True if it had one, or if
  // the tenant has no rate. False if the bucket is empty: *retry_after_s is
  // then the whole seconds until a token is back (at least 1), and the
  // refusal is counted (RateLimited).
  bool TryTake(const std::string& tenant, Clock::time_point now, int64_t* retry_after_s);
  // Gives back a token taken for a claim that turned out to cost nothing (an
  // idempotent replay); never past the burst. Nothing for a tenant without
  // a rate.
  void Refund(const std::string& tenant, Clock::time_point now);

  // `tenant`'s rate, and the tokens its bucket holds at `now`; nullopt for a
  // tenant without a rate.
  struct Level {
    double rate = 0;
    double tokens = 0;
  };
  std::optional<Level> LevelOf(const std::string& tenant, Clock::time_point now) const;
  // Claims of `tenant` refused so far; 0 for a tenant without a rate.
  uint64_t RateLimited(const std::string& tenant) const;

 private:
  struct Bucket {
    mutable base::Mutex mu;
    mutable double rate GUARDED_BY(mu) = 0;   // tokens a second
    mutable double burst GUARDED_BY(mu) = 0;  // at most this many held
    mutable double tokens GUARDED_BY(mu) = 0;
    mutable Clock::time_point refilled GUARDED_BY(mu);
    mutable std::atomic<uint64_t> refused{0};
    // Adds what `now` brings since the last refill.
    void RefillLocked(Clock::time_point now) const REQUIRES(mu);
  };
  using Buckets = std::map<std::string, std::shared_ptr<Bucket>>;
  std::shared_ptr<const Bucket> Find(const std::string& tenant) const;

  base::SharedSlot<const Buckets> buckets_{std::make_shared<const Buckets>()};
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_CLAIM_RATE_LIMITER_H_
