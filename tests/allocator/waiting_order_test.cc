// The waiting room's order across pools: a waiting claim queues under every
// pool it names (its region's and each fallback region's), so a later claim
// naming a made-up region and a real fallback neither jumps the queue of the
// real pool nor claims once per made-up region when a container frees.

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "allocator/allocator.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_storage.h"
#include "tests/support/pool_fixture.h"
#include "tests/support/waiting_claims.h"

namespace {

using store::Outcome;
using store::SessionResult;
using testing::ClaimAsync;
using testing::Eventually;
using testing::HoldOnly;
using testing::Pending;
using testing::Pool;
using testing::RetryEvery;

// Counts the Claims the allocator asks of the storage (each a writer job).
class ClaimCounter : public testing::ForwardingStorage {
 public:
  explicit ClaimCounter(store::Storage* real) : ForwardingStorage(real) {}
  std::atomic<int> claims{0};
  void Claim(store::ClaimRequest req, store::SessionCallback done) override {
    ++claims;
    real()->Claim(std::move(req), std::move(done));
  }
};

store::ClaimRequest WaitingIn(const std::string& tenant, const std::string& region,
                              const std::vector<std::string>& fallbacks = {}) {
  auto req = testing::Req(region, tenant, "chrome");
  req.wait_ms = 20000;
  req.fallback_regions = fallbacks;
  return req;
}

std::string Release(Pool& pool, const std::string& tenant, const SessionResult& held) {
  return store::OutcomeName(
      pool.Release(testing::Tenant(tenant), held.session.session_id, held.session.token).outcome);
}

}  // namespace

// Issue: waiters queued by their first region only, so a later claim whose
// first region was made up (its own, empty queue) was first in line there and
// took the container freed in its fallback before the claim waiting on it.
TEST_CASE("wait: a later claim with a made-up region and a real fallback waits its turn") {
  Pool pool(EDGEALLOC_ENGINES);
  SessionResult held = HoldOnly(pool);
  allocator::Allocator alloc(&pool.seam(), RetryEvery(10));
  alloc.Start();
  auto first = ClaimAsync(alloc, WaitingIn("t1", "weur"));
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == 1; }));
  auto later = ClaimAsync(alloc, WaitingIn("t2", "a-made-up", {"weur"}));
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == 2; }));
  CHECK_FALSE(later->Ready());  // its fallback is registered: it waits

  REQUIRE(Release(pool, "t0", held) == "ok");
  SessionResult got = first->future.get();
  INFO(got.message);
  REQUIRE(got.outcome == Outcome::kOk);
  CHECK(got.session.container_id == "only");
  CHECK_FALSE(later->Ready());  // behind the first: waits on

  REQUIRE(Release(pool, "t1", got) == "ok");
  SessionResult next = later->future.get();
  REQUIRE(next.outcome == Outcome::kOk);
  CHECK(next.session.container_id == "only");
  CHECK(alloc.stats().wait_claims_failed.load() == 0);
}

// Issue: each made-up region was a queue of its own whose first in line
// claimed whenever its real fallback had a container: one release made a
// writer job per made-up region (hundreds), none of them counted.
TEST_CASE("wait: one freed container lets one waiter claim, however many regions they made up") {
  constexpr int kWaiters = 60;
  Pool pool(EDGEALLOC_ENGINES);
  SessionResult held = HoldOnly(pool);
  ClaimCounter counter(&pool.seam());
  allocator::Allocator alloc(&counter, RetryEvery(10));
  alloc.Start();
  std::vector<std::shared_ptr<Pending>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(ClaimAsync(
        alloc, WaitingIn("t" + std::to_string(i % 6), "z" + std::to_string(i), {"weur"})));
  }
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == kWaiters; }));
  // Every waiter probed and found waiting on a registered pool: no claim
  // after the first attempts (which the later ones skip: others wait).
  const uint64_t probes = alloc.stats().wait_probes.load();
  REQUIRE(Eventually([&] { return alloc.stats().wait_probes.load() > probes + 3; }));
  const int before = counter.claims.load();
  CHECK(before <= kWaiters);

  REQUIRE(Release(pool, "t0", held) == "ok");
  REQUIRE(Eventually([&] { return alloc.stats().waits_served.load() == 1; }));
  // The served one holds the only container again: let a few rounds pass.
  const uint64_t after = alloc.stats().wait_probes.load();
  REQUIRE(Eventually([&] { return alloc.stats().wait_probes.load() > after + 5; }));
  const int made = counter.claims.load() - before;
  INFO("claims one release made: " << made);
  CHECK(made >= 1);
  CHECK(made <= 2);
  CHECK(alloc.stats().waiting.load() == kWaiters - 1);
  // The one served was the first in line.
  CHECK(waiters[0]->Ready());
  CHECK(alloc.stats().wait_claims_failed.load() == static_cast<uint64_t>(made - 1));
  alloc.Stop();
}

// Issue: the per-pool bound looked at a claim's first region only, so claims
// naming made-up regions and a real fallback were never held to the bound of
// the pool they wait for.
TEST_CASE("wait: a claim counts against the per-pool bound of every region it names") {
  allocator::AllocatorOptions options = RetryEvery(10);
  options.max_waiters_per_pool = 2;
  Pool pool(EDGEALLOC_ENGINES);
  SessionResult held = HoldOnly(pool);
  allocator::Allocator alloc(&pool.seam(), options);
  alloc.Start();
  auto one = ClaimAsync(alloc, WaitingIn("t1", "weur"));
  auto two = ClaimAsync(alloc, WaitingIn("t2", "z2", {"weur"}));
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == 2; }));
  // Its own region's queue is empty; weur's, its fallback's, is full.
  SessionResult third = ClaimAsync(alloc, WaitingIn("t3", "z3", {"weur"}))->future.get();
  CHECK(third.outcome == Outcome::kOverloaded);
  CHECK_THAT(third.message, Catch::Contains("weur"));
  CHECK(alloc.stats().waits_refused.load() == 1);
  alloc.Stop();
  CHECK(one->future.get().outcome == Outcome::kNoCapacity);
  CHECK(two->future.get().outcome == Outcome::kNoCapacity);
  (void)held;
}

// Issue: waiters were served first come first served across tenants, so one
// tenant's hundreds of waiters made another tenant's single waiter wait
// behind all of them. Tenants now take turns in each pool.
TEST_CASE("wait: a tenant's one waiter is served within two releases of another's 500") {
  constexpr int kMany = 500;
  allocator::AllocatorOptions options = RetryEvery(10);
  options.max_waiters_per_tenant = 2 * kMany;
  Pool pool(EDGEALLOC_ENGINES);
  SessionResult held = HoldOnly(pool);
  allocator::Allocator alloc(&pool.seam(), options);
  alloc.Start();
  std::vector<std::shared_ptr<Pending>> many;
  for (int i = 0; i < kMany; ++i) many.push_back(ClaimAsync(alloc, WaitingIn("a", "weur")));
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == kMany; }));
  auto one = ClaimAsync(alloc, WaitingIn("b", "weur"));
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == kMany + 1; }));

  // a's claims made their first attempts side by side, so which of them
  // queued first is the storage's order: the one served is found by looking.
  auto served_of_many = [&] {
    std::vector<size_t> ready;
    for (size_t i = 0; i < many.size(); ++i) {
      if (many[i]->future.valid() && many[i]->Ready()) ready.push_back(i);
    }
    return ready;
  };
  // Both never served: the earlier arrival, one of a's, goes first.
  // (waits_served is counted a moment before the waiter's answer is given:
  // the answer is waited for.)
  REQUIRE(Release(pool, "t0", held) == "ok");
  REQUIRE(Eventually([&] { return alloc.stats().waits_served.load() == 1; }));
  REQUIRE(Eventually([&] { return served_of_many().size() == 1; }));
  std::vector<size_t> ready = served_of_many();
  REQUIRE(ready.size() == 1);
  SessionResult first = many[ready[0]]->future.get();
  REQUIRE(first.outcome == Outcome::kOk);
  CHECK_FALSE(one->Ready());
  // Then b's turn, ahead of a's other 499.
  REQUIRE(Release(pool, "a", first) == "ok");
  SessionResult second = one->future.get();
  INFO(second.message);
  REQUIRE(second.outcome == Outcome::kOk);
  CHECK(second.session.container_id == "only");
  // And a's next after it: a's turn again.
  REQUIRE(Release(pool, "b", second) == "ok");
  REQUIRE(Eventually([&] { return alloc.stats().waits_served.load() == 3; }));
  // The first's answer was taken above.
  CHECK(Eventually([&] { return served_of_many().size() == 1; }));
  CHECK(served_of_many().size() == 1);  // and no more came
  alloc.Stop();
}

// Issue: a claim that gave up after wait_ms was told Retry-After: 1 whatever
// its pool's pace; now from the pace of the pool's recent serves and the
// waiters ahead of it.
TEST_CASE("wait: a claim that gives up is told Retry-After from its pool's pace and its place") {
  Pool pool(EDGEALLOC_ENGINES);
  SessionResult held = HoldOnly(pool);
  allocator::Allocator alloc(&pool.seam(), RetryEvery(10));
  alloc.Start();
  std::vector<std::shared_ptr<Pending>> waiting;
  for (int i = 0; i < 3; ++i) waiting.push_back(ClaimAsync(alloc, WaitingIn("a", "weur")));
  REQUIRE(Eventually([&] { return alloc.stats().waiting.load() == 3; }));
  // Two serves: the pool's pace is known from here on.
  REQUIRE(Release(pool, "t0", held) == "ok");
  SessionResult first = waiting[0]->future.get();
  REQUIRE(first.outcome == Outcome::kOk);
  REQUIRE(Release(pool, "a", first) == "ok");
  REQUIRE(waiting[1]->future.get().outcome == Outcome::kOk);

  // One waiter ahead of it (a's third), and the two serves at least 2 s
  // before it gives up: at most 0.5 a second, so at least (1 + 1) / 0.5 s.
  store::ClaimRequest req = WaitingIn("a", "weur");
  req.wait_ms = 2000;
  SessionResult gave_up = ClaimAsync(alloc, req)->future.get();
  INFO(gave_up.message);
  REQUIRE(gave_up.outcome == Outcome::kNoCapacity);
  CHECK(gave_up.retry_after_s >= 4);
  CHECK(gave_up.retry_after_s <= allocator::PoolTurns::kMaxRetryAfterS);
  alloc.Stop();
}
