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

// What each case starts from: a limiter of `rates` (claims a second by
// tenant), the instant t0 its buckets are read at, and where a refusal's
// Retry-After goes.
struct Limited {
  explicit Limited(std::map<std::string, double> rates) : limiter(Rates(std::move(rates))) {}
  // Whether `tenant` may claim `after` t0 (TryTake).
  bool Take(const std::string& tenant, Clock::duration after = {}) {
    return limiter.TryTake(tenant, t0 + after, &retry);
  }
  ClaimRateLimiter limiter;
  const Clock::time_point t0 = Clock::now();
  int64_t retry = 0;
};

TEST_CASE("claim rate: a burst of the rate, then refused with Retry-After, then refilled") {
  Limited l({{"acme", 5}, {"bolt", 2}, {"calm", 0}});
  for (int i = 0; i < 5; ++i) {
    INFO(i);
    CHECK(l.Take("acme"));
  }
  CHECK_FALSE(l.Take("acme"));
  CHECK(l.retry == 1);  // 0.2 s to the next token: whole seconds, at least 1
  CHECK(l.limiter.RateLimited("acme") == 1);
  // Another tenant's bucket is its own; a tenant without a rate is never refused.
  CHECK(l.Take("bolt"));
  CHECK(l.Take("bolt"));
  CHECK_FALSE(l.Take("bolt"));
  for (const char* free : {"calm", "default", "made-up"}) {
    for (int i = 0; i < 100; ++i) CHECK(l.Take(free));
    CHECK(l.limiter.RateLimited(free) == 0);
    CHECK_FALSE(l.limiter.LevelOf(free, l.t0).has_value());
  }
  // 200 ms later one token is back, and only one.
  CHECK(l.Take("acme", milliseconds(200)));
  CHECK_FALSE(l.Take("acme", milliseconds(200)));
  // Refill stops at the burst: after a minute, 5 again, not 300.
  const auto minute = std::chrono::seconds(60);
  const Clock::time_point later = l.t0 + minute;
  REQUIRE(l.limiter.LevelOf("acme", later).has_value());
  CHECK(l.limiter.LevelOf("acme", later)->tokens == Approx(5));
  CHECK(l.limiter.LevelOf("acme", later)->rate == 5);
  for (int i = 0; i < 5; ++i) CHECK(l.Take("acme", minute));
  CHECK_FALSE(l.Take("acme", minute));
  CHECK(l.limiter.RateLimited("acme") == 3);
}

TEST_CASE("claim rate: a rate under one a second lets one through, then says how long to wait") {
  Limited l({{"slow", 0.25}});
  CHECK(l.Take("slow"));
  CHECK_FALSE(l.Take("slow"));
  CHECK(l.retry == 4);
  CHECK_FALSE(l.Take("slow", milliseconds(3900)));
  CHECK(l.retry == 1);
  CHECK(l.Take("slow", milliseconds(4000)));
}

TEST_CASE("claim rate: a refund gives a token back, never past the burst") {
  Limited l({{"acme", 2}});
  CHECK(l.Take("acme"));
  CHECK(l.Take("acme"));
  l.limiter.Refund("acme", l.t0);
  CHECK(l.Take("acme"));
  CHECK_FALSE(l.Take("acme"));
  for (int i = 0; i < 10; ++i) l.limiter.Refund("acme", l.t0);
  CHECK(l.limiter.LevelOf("acme", l.t0)->tokens == Approx(2));
  l.limiter.Refund("nobody", l.t0);  // no bucket: nothing
}

TEST_CASE("claim rate: new limits keep what is unchanged, and add, change and drop buckets") {
  Limited l({{"acme", 5}, {"bolt", 2}, {"gone", 1}});
  for (int i = 0; i < 5; ++i) CHECK(l.Take("acme"));
  CHECK_FALSE(l.Take("acme"));
  CHECK(l.Take("bolt"));
  l.limiter.SetLimits(Rates({{"acme", 5}, {"bolt", 1}, {"new", 3}}), l.t0);
  // acme's rate is unchanged: its bucket is as empty as before, its refusal kept.
  CHECK_FALSE(l.Take("acme"));
  CHECK(l.limiter.RateLimited("acme") == 2);
  // bolt's changed: the token it had left is kept (at most the new burst of 1).
  REQUIRE(l.limiter.LevelOf("bolt", l.t0).has_value());
  CHECK(l.limiter.LevelOf("bolt", l.t0)->rate == 1);
  CHECK(l.limiter.LevelOf("bolt", l.t0)->tokens == 1);
  CHECK(l.Take("bolt"));
  CHECK_FALSE(l.Take("bolt"));
  CHECK(l.retry == 1);
  // A new tenant starts full; one no longer given a rate is never refused.
  for (int i = 0; i < 3; ++i) CHECK(l.Take("new"));
  CHECK_FALSE(l.Take("new"));
  CHECK_FALSE(l.limiter.LevelOf("gone", l.t0).has_value());
  for (int i = 0; i < 10; ++i) CHECK(l.Take("gone"));
}

}  // namespace
}  // namespace server
