#ifndef EDGEALLOC_TESTS_SUPPORT_WAITING_CLAIMS_H_
#define EDGEALLOC_TESTS_SUPPORT_WAITING_CLAIMS_H_

// Claims answered later, for the tests of the allocator's waiting room
// (tests/allocator/): written once here, where each test file had its own
// copy, so that the files can share a unity batch.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "allocator/allocator.h"
#include "base/clock.h"
#include "store/types.h"
#include "tests/support/pool_fixture.h"

namespace testing {

// A claim answered later: its result once it comes, and when it came.
struct Pending {
  std::promise<store::SessionResult> promise;
  std::future<store::SessionResult> future = promise.get_future();
  int64_t answered_ms = 0;  // base::NowMs() at the answer
  bool Ready() { return future.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready; }
};

// Claims `req` through `alloc` without waiting for the answer.
inline std::shared_ptr<Pending> ClaimAsync(allocator::Allocator& alloc, store::ClaimRequest req,
                                           std::function<bool()> abandoned = {}) {
  auto p = std::make_shared<Pending>();
  alloc.Claim(
      std::move(req),
      [p](store::SessionResult r) {
        p->answered_ms = base::NowMs();
        p->promise.set_value(std::move(r));
      },
      std::move(abandoned));
  return p;
}

// A claim of weur/chrome by `tenant` that may wait `wait_ms`.
inline store::ClaimRequest Waiting(int64_t wait_ms, const std::string& tenant = "t1") {
  store::ClaimRequest req = Req("weur", tenant, "chrome");
  req.wait_ms = wait_ms;
  return req;
}

// The default options, but for how often waiting claims try again.
inline allocator::AllocatorOptions RetryEvery(int wait_retry_ms) {
  allocator::AllocatorOptions options;
  options.wait_retry_ms = wait_retry_ms;
  return options;
}

// Registers weur/chrome's only container and has tenant t0 hold it: the
// pool exists (a claim for a pool nobody registered never waits) and is full.
inline store::SessionResult HoldOnly(Pool& pool) {
  pool.Add({Spec("only", "weur", "chrome")});
  store::SessionResult held = pool.Claim(Req("weur", "t0", "chrome"));
  REQUIRE(held.outcome == store::Outcome::kOk);
  return held;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_WAITING_CLAIMS_H_
