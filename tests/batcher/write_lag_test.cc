// Write lag is not silence: heartbeats accepted (202) and still waiting in a
// lane's queue, or in a batch being written slowly (a database restarting, a
// slow fsync), count as heard from the moment they were accepted. The reaper
// of a lane judges silence only up to the acceptance of the lane's oldest
// report not yet stored (Batcher::SilenceCutoff).

#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "batcher/batcher.h"
#include "tests/batcher/reports.h"
#include "tests/support/engines.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_storage.h"

namespace {

using batcher::Batcher;
using batcher::BatcherOptions;
using std::chrono::milliseconds;

void SleepMs(int64_t ms) { std::this_thread::sleep_for(milliseconds(ms)); }

// A store whose heartbeat writes take `delay_ms` while `slow` is set, every
// other statement (the reaper's sweeps) as fast as ever: the lane lags, the
// store does not fail, so the hearing sees no deafness.
class SlowWrites : public testing::ForwardingStorage {
 public:
  using ForwardingStorage::ForwardingStorage;
  std::atomic<bool> slow{false};
  std::atomic<int64_t> delay_ms{0};
  // While set, heartbeat writes wait until it is cleared (a stalled writer).
  std::atomic<bool> held{false};
  store::Status WriteHeartbeats(int partition, const std::vector<store::HeartbeatRow>& rows,
                                store::HeartbeatWriteResult* result) override {
    if (slow.load()) SleepMs(delay_ms.load());
    while (held.load()) SleepMs(2);
    return ForwardingStorage::WriteHeartbeats(partition, rows, result);
  }
};

using testing::Beat;
using testing::StatusOf;

// c-1 keeps reporting every 20 ms and every report is accepted, while each
// heartbeat write of the lane takes 2.5 times dead_after: its stored stamp
// falls up to two writes behind, yet it is never dead. c-2 stops reporting
// when the lane slows down: it is dead once no report of it was accepted in
// the dead_after before the lane's oldest report not yet stored, while the
// lane is still slow.
TEST_CASE("write lag: a lane writing slower than dead-after kills no reporting container, and "
          "a silent one still dies") {
  // One lane (partition), so that c-1 and c-2 share its lag.
  testing::Engine engine(EDGEALLOC_ENGINES, {}, /*pg_writers=*/1);
  SlowWrites store(engine.storage.get());
  std::promise<store::ContainerResult> registered;
  engine->Register(
      {{"c-1", "weur", "chrome", 0, "{}", 1, {}}, {"c-2", "weur", "chrome", 0, "{}", 1, {}}},
      [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);

  BatcherOptions options;
  options.dead_after_ms = 400;
  options.reaper_interval_ms = 5;
  Batcher b(&store, options);
  REQUIRE(b.partitions() == 1);
  b.Start();
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  REQUIRE(b.Submit(Beat("c-2")).accepted());
  const auto written = [&](uint64_t n) {
    const auto until = std::chrono::steady_clock::now() + milliseconds(10000);
    while (b.stats().written.load() < n && std::chrono::steady_clock::now() < until) SleepMs(2);
    return b.stats().written.load() >= n;
  };
  REQUIRE(written(2));

  store.delay_ms = 1000;
  store.slow = true;
  // Reports for at least 3 s (three slow writes), and until c-2 is dead.
  const testing::LagWatch watch =
      testing::ReportWhileLagging(b, engine.storage.get(), "c-1", "c-2");
  // The lane did lag: c-1's stored stamp fell more than dead_after behind.
  CHECK(watch.max_lag_ms > options.dead_after_ms);
  CHECK_FALSE(watch.reporter_dead);
  CHECK(watch.silent_dead);
  // Still slow when c-2 died: its death was judged on a lagging lane.
  CHECK(store.slow.load());
  CHECK(b.stats().dead_marked.load() == 1);
  CHECK(b.hearing().spans(batcher::Hearing::Cause::kWriteFailing) == 0);
  store.slow = false;
  b.Stop();
  CHECK(StatusOf(engine.storage.get(), "c-1") == "available");
  engine->StopWriters();
}

// One lane carrying two regions (PostgreSQL with one writer: a node's lanes
// carry every region; SQLite: regions of one shard). While the lane's writes
// wait, a region lags by its own heartbeats only: those of its containers,
// as the node's writes found them, and those whose container's region is
// not learned yet, which count for every region of the lane.
TEST_CASE("write lag: regions sharing a lane lag by their own heartbeats") {
  testing::Engine engine(EDGEALLOC_ENGINES, {}, /*pg_writers=*/1);
  SlowWrites store(engine.storage.get());
  std::promise<store::ContainerResult> registered;
  engine->Register({{"w-1", "weur", "chrome", 0, "{}", 1, {}},
                    {"e-1", "eeur", "chrome", 0, "{}", 1, {}},
                    {"n-1", "wnam", "chrome", 0, "{}", 1, {}}},
                   [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);
  Batcher b(&store, BatcherOptions{});
  REQUIRE(b.partitions() == 1);
  b.Start();
  // Written once: the node learns w-1's and e-1's regions.
  REQUIRE(b.Submit(Beat("w-1")).accepted());
  REQUIRE(b.Submit(Beat("e-1")).accepted());
  REQUIRE(testing::Eventually([&] { return b.stats().written.load() >= 2; }));

  store.held = true;
  REQUIRE(b.Submit(Beat("w-1")).accepted());
  REQUIRE(testing::Eventually([&] { return b.RegionLagMs("weur") > 100; }));
  CHECK(b.LagMs(0) >= 100);            // the lane lags
  CHECK(b.RegionLagMs("eeur") == 0);   // nothing of eeur waits in it
  CHECK(b.RegionLagMs("wnam") == 0);
  // n-1's region is not learned yet: its wait counts for every region.
  REQUIRE(b.Submit(Beat("n-1")).accepted());
  CHECK(testing::Eventually([&] { return b.RegionLagMs("eeur") > 0; }));
  CHECK(b.RegionLagMs("wnam") > 0);
  CHECK(b.RegionLagMs("weur") > 100);  // still its own oldest

  store.held = false;
  CHECK(testing::Eventually([&] {
    return b.RegionLagMs("weur") == 0 && b.RegionLagMs("eeur") == 0 && b.RegionLagMs("wnam") == 0;
  }));
  b.Stop();
  engine->StopWriters();
}

}  // namespace
