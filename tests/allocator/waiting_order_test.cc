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

namespace {

using store::Outcome;
using store::SessionResult;
using testing::Eventually;
using testing::Pool;

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

struct Pending {
  std::promise<SessionResult> promise;
  std::future<SessionResult> future = promise.get_future();
  bool Ready() { return future.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready; }
};

std::shared_ptr<Pending> ClaimAsync(allocator::Allocator& alloc, store::ClaimRequest req) {
  auto p = std::make_shared<Pending>();
  alloc.Claim(std::move(req), [p](SessionResult r) { p->promise.set_value(std::move(r)); }, {});
  return p;
}

store::ClaimRequest WaitingIn(const std::string& tenant, const std::string& region,
                              const std::vector<std::string>& fallbacks = {}) {
  auto req = testing::Req(region, tenant, "chrome");
  req.wait_ms = 20000;
  req.fallback_regions = fallbacks;
  return req;
}

allocator::AllocatorOptions RetryEvery(int wait_retry_ms) {
  allocator::AllocatorOptions options;
  options.wait_retry_ms = wait_retry_ms;
  return options;
}

// Registers weur/chrome's only container and has tenant t0 hold it.
SessionResult HoldOnly(Pool& pool) {
  pool.Add({testing::Spec("only", "weur", "chrome")});
  SessionResult held = pool.Claim(testing::Req("weur", "t0", "chrome"));
  REQUIRE(held.outcome == Outcome::kOk);
  return held;
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
