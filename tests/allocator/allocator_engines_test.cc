// The Allocator over each storage engine (tests/support/engines.h): what it
// adds to the seam (lease defaults, counters, messages, the lease reaper)
// holds whichever engine is below.
#include "allocator/allocator.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "base/clock.h"
#include "tests/support/engines.h"

namespace {

using store::Outcome;

store::SessionResult Claim(allocator::Allocator& a, const std::string& tenant, int64_t lease_ms = 0) {
  store::ClaimRequest req;
  req.caller.tenant = tenant;
  req.region = "weur";
  req.pool = "p";
  req.lease_ms = lease_ms;
  std::promise<store::SessionResult> p;
  auto f = p.get_future();
  a.Claim(std::move(req), [&p](store::SessionResult r) { p.set_value(std::move(r)); });
  return f.get();
}

void Register(store::Storage* s, int n) {
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < n; ++i) specs.push_back({"c" + std::to_string(i), "weur", "p", 0, "{}"});
  std::promise<store::ContainerResult> p;
  auto f = p.get_future();
  s->Register(specs, [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
  REQUIRE(f.get().outcome == Outcome::kOk);
}

}  // namespace

TEST_CASE("allocator engines: default lease, counters and the words of a refusal") {
  store::ClaimPolicy policy;
  policy.max_sessions_per_tenant = 1;
  testing::Engine e(GENERATE(as<std::string>{}, "sqlite", "postgres"), policy);
  Register(e.storage.get(), 2);
  allocator::AllocatorOptions options;
  options.default_lease_ms = 90000;
  allocator::Allocator a(e.storage.get(), options);
  const int64_t before = base::NowMs();
  auto c = Claim(a, "alice");
  REQUIRE(c.outcome == Outcome::kOk);
  CHECK(c.session.lease_expires_at_ms >= before + 90000);
  auto q = Claim(a, "alice");
  CHECK(q.outcome == Outcome::kQuotaExceeded);
  CHECK_THAT(q.message, Catch::Contains("alice") && Catch::Contains("maximum of 1"));
  CHECK(Claim(a, "bob").outcome == Outcome::kOk);
  auto none = Claim(a, "carol");
  CHECK(none.outcome == Outcome::kNoCapacity);
  CHECK_THAT(none.message, Catch::Contains("pool p of region weur"));
  CHECK(a.stats().claims_ok.load() == 2);
  CHECK(a.stats().claims_quota.load() == 1);
  CHECK(a.stats().claims_no_capacity.load() == 1);
}

TEST_CASE("allocator engines: the lease reaper ends sessions whose lease is over") {
  testing::Engine e(GENERATE(as<std::string>{}, "sqlite", "postgres"));
  Register(e.storage.get(), 3);
  allocator::AllocatorOptions options;
  options.reaper_interval_ms = 10;
  allocator::Allocator a(e.storage.get(), options);
  for (int i = 0; i < 3; ++i) REQUIRE(Claim(a, "t", /*lease_ms=*/1).outcome == Outcome::kOk);
  a.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (a.stats().lease_expiries.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  a.Stop();
  CHECK(a.stats().lease_expiries.load() == 3);
  CHECK(Claim(a, "t").outcome == Outcome::kOk);
}
