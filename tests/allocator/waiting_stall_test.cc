// Waiting claims against a stalled store: whatever the storage does (a
// stopped database, a link that forwards nothing, an outside row lock), a
// claim that waits is answered by its wait_ms and kWaitAnswerGraceMs (and a
// retry tick), never when the stall ends; a session its claim still makes
// after that answer is released, as a gone client's is.

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "allocator/allocator.h"
#include "base/clock.h"
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
using testing::Spec;
using testing::Tenant;
using testing::Waiting;

// A storage whose pool probes and claims can be held, as a stalled database
// holds them: a held probe blocks its caller, a held claim stays unanswered;
// Resume lets the probes read and hands the claims to the real storage.
class StallingStorage : public testing::ForwardingStorage {
 public:
  explicit StallingStorage(store::Storage* real) : ForwardingStorage(real) {}
  ~StallingStorage() override { Resume(); }

  void StallProbes() {
    std::lock_guard<std::mutex> lock(mu_);
    probes_stalled_ = true;
  }
  void StallClaims() {
    std::lock_guard<std::mutex> lock(mu_);
    claims_stalled_ = true;
  }
  void Resume() {
    std::vector<std::pair<store::ClaimRequest, store::SessionCallback>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      probes_stalled_ = claims_stalled_ = false;
      held.swap(held_claims_);
    }
    cv_.notify_all();
    for (auto& [req, done] : held) real()->Claim(std::move(req), std::move(done));
  }
  // Probes blocked now, and claims held now.
  int blocked_probes() {
    std::lock_guard<std::mutex> lock(mu_);
    return blocked_probes_;
  }
  size_t held_claims() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_claims_.size();
  }

  store::Status ProbePools(std::vector<store::PoolProbe>* pools) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++blocked_probes_;
      cv_.wait(lock, [this] { return !probes_stalled_; });
      --blocked_probes_;
    }
    return real()->ProbePools(pools);
  }
  void Claim(store::ClaimRequest req, store::SessionCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (claims_stalled_) {
        held_claims_.emplace_back(std::move(req), std::move(done));
        return;
      }
    }
    real()->Claim(std::move(req), std::move(done));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool probes_stalled_ = false, claims_stalled_ = false;
  int blocked_probes_ = 0;
  std::vector<std::pair<store::ClaimRequest, store::SessionCallback>> held_claims_;
};

// A pool on `engine`, and the Allocator under test, started, on a
// StallingStorage of the pool's storage. The stall ends before the Allocator
// goes, so that a failed check does not leave its Stop waiting on a held
// probe.
struct StalledPool {
  explicit StalledPool(const std::string& engine)
      : pool(engine), stalling(&pool.seam()), alloc(&stalling, {}) {
    alloc.Start();
  }
  ~StalledPool() { stalling.Resume(); }
  Pool pool;
  StallingStorage stalling;
  allocator::Allocator alloc;
};

// The claim's answer, if it comes within wait_ms, kWaitAnswerGraceMs and a
// loaded machine's slack (the stall lasts until the test ends it, so an
// answer that waits for the store never comes in time).
bool AnsweredInTime(Pending& p, int64_t wait_ms) {
  const int64_t bound_ms = wait_ms + allocator::kWaitAnswerGraceMs + 3000;
  return p.future.wait_for(std::chrono::milliseconds(bound_ms)) == std::future_status::ready;
}

// Tenant t0 holds the pool's only container, a claim of wait_ms waits for
// it; claims stall, t0 releases it (the next probe finds it), and the
// waiter's claim for it is held by the store. Returns the waiter, not yet
// answered.
std::shared_ptr<Pending> WaiterWithClaimHeld(StalledPool& stalled, int64_t wait_ms) {
  const SessionResult held = HoldOnly(stalled.pool);
  auto waiter = ClaimAsync(stalled.alloc, Waiting(wait_ms));
  REQUIRE(Eventually([&] { return stalled.alloc.stats().waiting.load() == 1; }));
  stalled.stalling.StallClaims();
  REQUIRE(stalled.pool.Release(Tenant("t0"), held.session.session_id, held.session.token)
              .outcome == Outcome::kOk);
  REQUIRE(Eventually([&] { return stalled.stalling.held_claims() == 1; }));
  return waiter;
}

}  // namespace

// Issue: the waiters' thread read the waiting pools itself, with no bound of
// its own, and answered the waiters whose time was up only once that read
// came back: a database stalled 16-21 s answered claims of wait_ms 2 s after
// the stall, past the clients' 15 s.
TEST_CASE("wait: a waiting claim is answered in time while the store's reads stall") {
  StalledPool stalled(EDGEALLOC_ENGINES);
  HoldOnly(stalled.pool);
  stalled.stalling.StallProbes();
  const int64_t began = base::NowMs();
  auto waiter = ClaimAsync(stalled.alloc, Waiting(400));
  REQUIRE(Eventually([&] { return stalled.stalling.blocked_probes() == 1; }));

  REQUIRE(AnsweredInTime(*waiter, 400));
  CHECK(stalled.stalling.blocked_probes() == 1);  // the read is still stalled
  SessionResult r = waiter->future.get();
  CHECK(store::OutcomeName(r.outcome) == std::string("no_capacity"));
  CHECK_THAT(r.message, Catch::Contains("after waiting"));
  INFO("answered after " << waiter->answered_ms - began << " ms");
  CHECK(waiter->answered_ms - began >= 400);
  CHECK(stalled.alloc.stats().waits_timed_out.load() == 1);
  CHECK(stalled.alloc.stats().waiting.load() == 0);
  stalled.stalling.Resume();
  stalled.alloc.Stop();
}

// Issue: a waiter whose claim was with the storage was answered by that
// claim's callback alone, however long the database took to give it.
TEST_CASE("wait: a waiter whose claim the store holds is answered, and the late session released") {
  StalledPool stalled(EDGEALLOC_ENGINES);
  auto waiter = WaiterWithClaimHeld(stalled, 600);

  REQUIRE(AnsweredInTime(*waiter, 600));
  CHECK(stalled.stalling.held_claims() == 1);  // the claim is still with the store
  SessionResult r = waiter->future.get();
  // Unknown, not no_capacity: the claim may yet make a session.
  CHECK(r.outcome == Outcome::kError);
  CHECK_THAT(r.message,
             Catch::Contains("had not answered") && Catch::Contains("outcome is unknown"));
  CHECK(stalled.alloc.stats().waits_stalled.load() == 1);

  // The stall ends and the claim makes its session: nobody holds it, so it
  // is released and the container is free again.
  stalled.stalling.Resume();
  REQUIRE(Eventually([&] { return stalled.alloc.stats().sessions_abandoned.load() == 1; }));
  CHECK(stalled.pool.Get("only").status == "available");
  CHECK(stalled.alloc.stats().waiting.load() == 0);
  stalled.alloc.Stop();
}

TEST_CASE("wait: a waiting claim whose first attempt the store holds is answered, keyed or not") {
  const bool keyed = GENERATE(false, true);
  StalledPool stalled(EDGEALLOC_ENGINES);
  stalled.pool.Add({Spec("only", "weur", "chrome")});
  stalled.stalling.StallClaims();
  auto req = Waiting(300);
  if (keyed) req.idempotency_key = "k-1";
  auto waiter = ClaimAsync(stalled.alloc, req);
  REQUIRE(Eventually([&] { return stalled.stalling.held_claims() == 1; }));

  REQUIRE(AnsweredInTime(*waiter, 300));
  SessionResult r = waiter->future.get();
  // Unknown, not no_capacity: the claim may yet make a session.
  CHECK(r.outcome == Outcome::kError);
  CHECK_THAT(r.message,
             Catch::Contains("had not answered") && Catch::Contains("outcome is unknown"));

  stalled.stalling.Resume();
  if (keyed) {
    // Kept for the key: its retry replays the session the claim made.
    REQUIRE(Eventually([&] { return stalled.alloc.stats().abandoned_sessions_kept.load() == 1; }));
    SessionResult retry = stalled.pool.Claim(req);
    CHECK(store::OutcomeName(retry.outcome) == std::string("replayed"));
    CHECK(retry.session.container_id == "only");
  } else {
    REQUIRE(Eventually([&] { return stalled.alloc.stats().sessions_abandoned.load() == 1; }));
    CHECK(stalled.pool.Get("only").status == "available");
  }
  stalled.alloc.Stop();
}

// At SIGTERM (EndWaits) a waiter whose claim the store holds is answered at
// once too, instead of holding the shutdown until the store answers.
TEST_CASE("wait: EndWaits answers at once a waiter whose claim the store holds") {
  StalledPool stalled(EDGEALLOC_ENGINES);
  auto waiter = WaiterWithClaimHeld(stalled, 20000);

  stalled.alloc.EndWaits();
  REQUIRE(waiter->future.wait_for(std::chrono::seconds(3)) == std::future_status::ready);
  CHECK(stalled.stalling.held_claims() == 1);
  const SessionResult stopped = waiter->future.get();
  CHECK(stopped.outcome == Outcome::kError);
  CHECK_THAT(stopped.message, Catch::Contains("stopping") && Catch::Contains("outcome is unknown"));
  // The session the claim makes when the stall ends is released by Stop,
  // which follows EndWaits at a shutdown.
  stalled.stalling.Resume();
  stalled.alloc.Stop();
  CHECK(stalled.alloc.stats().sessions_abandoned.load() == 1);
  CHECK(stalled.pool.Get("only").status == "available");
}
