// A heartbeat counts when it was accepted, not when it is written
// (store/report_counts_sql.h), on every engine: a row a node accepted before
// a container was judged dead, and wrote after that (a batch queued on a
// node that was paused, cut off, or whose writes failed a while), changes
// neither the container's liveness nor its state; one accepted after the
// death revives it. The death may be judged by another node on the same
// database (another Storage on it, as another process would be).
#include "store/storage.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using store::ReportedState;
using testing::Engine;

// The margin between the times the tests set apart. PostgreSQL maps a
// node's accept time onto the database's clock with the offset the node
// measured, which is off by half a round trip at most: far below this.
constexpr auto kMargin = std::chrono::milliseconds(300);

void Register(store::Storage* s, const std::vector<std::string>& ids) {
  std::vector<store::ContainerSpec> specs;
  for (const auto& id : ids) specs.push_back({id, "weur", "p", 0, "{}", 1, {}});
  auto r = testing::Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
}

// One row for `id`, accepted at `accepted_ms` (this node's clock), written now.
store::HeartbeatWriteResult Write(store::Storage* s, const std::string& id, int64_t accepted_ms,
                                  ReportedState state, std::optional<int64_t> ts_ms = {}) {
  int partition = -1;
  REQUIRE(s->PartitionOf(id, &partition).ok());
  store::HeartbeatWriteResult result;
  REQUIRE(s->WriteHeartbeats(partition, {{id, accepted_ms, ts_ms, 0.5, state}}, &result).ok());
  return result;
}

// Every partition's dead-container sweep, with everything silent: every
// container is judged dead now.
void JudgeAllDead(store::Storage* s) {
  const int64_t future = base::NowMs() + 60000;
  for (int p = 0; p < s->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(s->SweepSilentContainers(p, [future] { return future; }, store::HeldPools{}, 100, &sweep).ok());
  }
}

store::ContainerInfo Get(store::Storage* s, const std::string& id) {
  store::ContainerResult r = s->GetContainer(id);
  REQUIRE(r.outcome == Outcome::kOk);
  return r.container;
}

// Registers a (free) and b (held), lets kMargin pass, and returns a time
// after their registration and kMargin before now: when the late rows of
// the test were accepted.
int64_t RegisterAndAcceptLate(store::Storage* s) {
  Register(s, {"b"});
  store::ClaimRequest req = testing::Req("weur", "t1", "p");
  req.lease_ms = 60000;
  auto held = testing::Await<store::SessionResult>([&](auto cb) { s->Claim(req, cb); });
  REQUIRE(held.outcome == Outcome::kOk);
  REQUIRE(held.session.container_id == "b");
  Register(s, {"a"});
  std::this_thread::sleep_for(2 * kMargin);
  return base::NowMs() - kMargin.count();
}

// Rows accepted at `accepted` (before the death) for a and b, written now
// (after it): each is found (not unknown) and changes nothing.
void LateRowsChangeNothing(store::Storage* s, int64_t accepted) {
  for (const std::string id : {"a", "b"}) {
    INFO(id);
    const store::ContainerInfo dead = Get(s, id);
    REQUIRE(dead.status == "dead");
    for (ReportedState state : {ReportedState::kReady, ReportedState::kNone}) {
      for (std::optional<int64_t> ts : {std::optional<int64_t>(), std::optional<int64_t>(1)}) {
        const store::HeartbeatWriteResult r = Write(s, id, accepted, state, ts);
        CHECK(r.written == 1);
        CHECK(r.stale == 1);
        CHECK(r.unknown.empty());
        const store::ContainerInfo after = Get(s, id);
        CHECK(after.status == "dead");
        CHECK(after.last_heartbeat_ms == dead.last_heartbeat_ms);
      }
    }
  }
}

// Rows accepted after the death: a comes back with its `ready`.
void RowAcceptedAfterDeathRevives(store::Storage* s) {
  std::this_thread::sleep_for(kMargin);
  const int64_t accepted = base::NowMs();
  const int64_t stamp = Get(s, "a").last_heartbeat_ms;
  const store::HeartbeatWriteResult r = Write(s, "a", accepted, ReportedState::kReady);
  CHECK(r.written == 1);
  CHECK(r.stale == 0);
  const store::ContainerInfo back = Get(s, "a");
  CHECK(back.status == "available");
  CHECK(back.last_heartbeat_ms > stamp);
}

}  // namespace

TEST_CASE("report time: a heartbeat accepted before a death and written after it revives nothing") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  const int64_t accepted = RegisterAndAcceptLate(s);
  JudgeAllDead(s);
  LateRowsChangeNothing(s, accepted);
  RowAcceptedAfterDeathRevives(s);
}

TEST_CASE("report time: the same when another node on the database judged the death") {
  Engine e(EDGEALLOC_ENGINES);
  std::unique_ptr<store::Storage> other = e.Open();
  store::Storage* s = e.storage.get();
  const int64_t accepted = RegisterAndAcceptLate(s);
  JudgeAllDead(other.get());
  LateRowsChangeNothing(s, accepted);
  RowAcceptedAfterDeathRevives(s);
  CHECK(Get(other.get(), "a").status == "available");
}

// A report accepted right after the death, in the same millisecond or
// (PostgreSQL) within the error of the node's measure of the database's
// clock, may have been accepted after it: it counts. Many rounds, so that
// the same millisecond comes up.
TEST_CASE("report time: a report accepted right after a death revives the container") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"a"});
  for (int round = 0; round < 20; ++round) {
    INFO("round " << round);
    JudgeAllDead(s);
    REQUIRE(Get(s, "a").status == "dead");
    const store::HeartbeatWriteResult r = Write(s, "a", base::NowMs(), ReportedState::kReady);
    CHECK(r.stale == 0);
    CHECK(Get(s, "a").status == "available");
  }
}
