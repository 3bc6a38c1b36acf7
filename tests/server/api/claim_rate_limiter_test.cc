#include "server/api/claim_rate_limiter.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <string>

namespace server {
namespace {

using std::chrono::milliseconds;
using Clock = ClaimRateLimiter::Clock;

std::map<std::string, store::TenantLimits> Rates(std::map<std::string, double> rates) {
  std::map<std::string, store::TenantLimits> tenants;
  for (const auto& [tenant, rate] : rates) tenants[tenant].claims_per_s = rate;
  return tenants;
}

TEST_CASE("claim rate: a burst of the rate, then refused with Retry-After, then refilled") {
  ClaimRateLimiter limiter(Rates({{"acme", 5}, {"bolt", 2}, {"calm", 0}}));
  const Clock::time_point t0 = Clock::now();
  int64_t retry = 0;
  for (int i = 0; i < 5; ++i) {
    INFO(i);
    CHECK(limiter.TryTake("acme", t0, &retry));
  }
  CHECK_FALSE(limiter.TryTake("acme", t0, &retry));
  CHECK(retry == 1);  // 0.2 s to the next token: whole seconds, at least 1
  CHECK(limiter.RateLimited("acme") == 1);
  // Another tenant's bucket is its own; a tenant without a rate is never refused.
  CHECK(limiter.TryTake("bolt", t0, &retry));
  CHECK(limiter.TryTake("bolt", t0, &retry));
  CHECK_FALSE(limiter.TryTake("bolt", t0, &retry));
  for (const char* free : {"calm", "default", "made-up"}) {
    for (int i = 0; i < 100; ++i) CHECK(limiter.TryTake(free, t0, &retry));
    CHECK(limiter.RateLimited(free) == 0);
    CHECK_FALSE(limiter.LevelOf(free, t0).has_value());
  }
  // 200 ms later one token is back, and only one.
  CHECK(limiter.TryTake("acme", t0 + milliseconds(200), &retry));
  CHECK_FALSE(limiter.TryTake("acme", t0 + milliseconds(200), &retry));
  // Refill stops at the burst: after a minute, 5 again, not 300.
  const Clock::time_point later = t0 + std::chrono::seconds(60);
  REQUIRE(limiter.LevelOf("acme", later).has_value());
  CHECK(limiter.LevelOf("acme", later)->tokens == Approx(5));
  CHECK(limiter.LevelOf("acme", later)->rate == 5);
  for (int i = 0; i < 5; ++i) CHECK(limiter.TryTake("acme", later, &retry));
  CHECK_FALSE(limiter.TryTake("acme", later, &retry));
  CHECK(limiter.RateLimited("acme") == 3);
}

TEST_CASE("claim rate: a rate under one a second lets one through, then says how long to wait") {
  ClaimRateLimiter limiter(Rates({{"slow", 0.25}}));
  const Clock::time_point t0 = Clock::now();
  int64_t retry = 0;
  CHECK(limiter.TryTake("slow", t0, &retry));
  CHECK_FALSE(limiter.TryTake("slow", t0, &retry));
  CHECK(retry == 4);
  CHECK_FALSE(limiter.TryTake("slow", t0 + milliseconds(3900), &retry));
  CHECK(retry == 1);
  CHECK(limiter.TryTake("slow", t0 + milliseconds(4000), &retry));
}

TEST_CASE("claim rate: a refund gives a token back, never past the burst") {
  ClaimRateLimiter limiter(Rates({{"acme", 2}}));
  const Clock::time_point t0 = Clock::now();
  int64_t retry = 0;
  CHECK(limiter.TryTake("acme", t0, &retry));
  CHECK(limiter.TryTake("acme", t0, &retry));
  limiter.Refund("acme", t0);
  CHECK(limiter.TryTake("acme", t0, &retry));
  CHECK_FALSE(limiter.TryTake("acme", t0, &retry));
  for (int i = 0; i < 10; ++i) limiter.Refund("acme", t0);
  CHECK(limiter.LevelOf("acme", t0)->tokens == Approx(2));
  limiter.Refund("nobody", t0);  // no bucket: nothing
}

TEST_CASE("claim rate: new limits keep what is unchanged, and add, change and drop buckets") {
  ClaimRateLimiter limiter(Rates({{"acme", 5}, {"bolt", 2}, {"gone", 1}}));
  const Clock::time_point t0 = Clock::now();
  int64_t retry = 0;
  for (int i = 0; i < 5; ++i) CHECK(limiter.TryTake("acme", t0, &retry));
  CHECK_FALSE(limiter.TryTake("acme", t0, &retry));
  CHECK(limiter.TryTake("bolt", t0, &retry));
  limiter.SetLimits(Rates({{"acme", 5}, {"bolt", 1}, {"new", 3}}), t0);
  // acme's rate is unchanged: its bucket is as empty as before, its refusal kept.
  CHECK_FALSE(limiter.TryTake("acme", t0, &retry));
  CHECK(limiter.RateLimited("acme") == 2);
  // bolt's changed: the token it had left is kept (at most the new burst of 1).
  REQUIRE(limiter.LevelOf("bolt", t0).has_value());
  CHECK(limiter.LevelOf("bolt", t0)->rate == 1);
  CHECK(limiter.LevelOf("bolt", t0)->tokens == 1);
  CHECK(limiter.TryTake("bolt", t0, &retry));
  CHECK_FALSE(limiter.TryTake("bolt", t0, &retry));
  CHECK(retry == 1);
  // A new tenant starts full; one no longer given a rate is never refused.
  for (int i = 0; i < 3; ++i) CHECK(limiter.TryTake("new", t0, &retry));
  CHECK_FALSE(limiter.TryTake("new", t0, &retry));
  CHECK_FALSE(limiter.LevelOf("gone", t0).has_value());
  for (int i = 0; i < 10; ++i) CHECK(limiter.TryTake("gone", t0, &retry));
}

}  // namespace
}  // namespace server
