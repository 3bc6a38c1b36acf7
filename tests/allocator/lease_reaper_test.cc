#include "allocator/lease_reaper.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/db_queries.h"
#include "tests/support/pool_fixture.h"

namespace {

using store::Outcome;

// Every claim ends in one history row (its release keeps it). Pruned only
// once a second, 8,000 rows at most, the history ran up to a second of
// claims past its bound at any rate, and without bound at a rate above 8,000
// a second (the store makes about 25,000). Now it is pruned every 100 ms, up
// to --history-prune-rows-per-s: past its bound by the rows of about one
// period. The event log (two events a cycle: claimed, ended) is pruned by
// age in the same pass: it keeps --event-retention-ms of events and about
// one period more.
TEST_CASE("history: pruning keeps the history and the event log bounded while claims and "
          "releases run flat out") {
  allocator::AllocatorOptions options;
  options.session_history_max_rows = 500;
  options.event_retention_ms = 300;
  testing::Pool pool(options, 1);  // SQLite, kNormal: as fast as the store goes
  constexpr int kThreads = 8;
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < kThreads * 2; ++i) {
    specs.push_back(testing::Spec("c" + std::to_string(i), "weur"));
  }
  pool.Add(specs);
  pool.alloc().Start();

  std::atomic<bool> stop{false};
  std::atomic<int64_t> cycles{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        store::SessionResult r = pool.Claim(testing::Req("weur"));
        if (r.outcome != Outcome::kOk) {
          if (r.outcome != Outcome::kNoCapacity) ++failures;
          continue;
        }
        if (pool.Release(testing::Tenant("t1"), r.session.session_id, r.session.token).outcome !=
            Outcome::kOk) {
          ++failures;
        }
        ++cycles;
      }
    });
  }
  // The history's size, as a reader sees it, every 10 ms for 3 s: its peak,
  // and how far past its bound it was on average.
  auto reader = testing::OpenReadOnlyOrDie(pool.map().PathOf(0));
  const int64_t bound = options.session_history_max_rows;
  int64_t peak = 0, samples = 0, over_sum = 0, events_peak = 0, events_sum = 0;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
    const int64_t rows = testing::QueryInt(reader.get(), "SELECT count(*) FROM session_history");
    peak = std::max(peak, rows);
    over_sum += std::max<int64_t>(0, rows - bound);
    const int64_t events = testing::QueryInt(reader.get(), "SELECT count(*) FROM events");
    events_peak = std::max(events_peak, events);
    events_sum += events;
    ++samples;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t done = cycles.load();
  stop.store(true);
  for (auto& th : threads) th.join();
  pool.alloc().Stop();

  // Measured in seconds of claims at the rate this run reached, so that a
  // slow or loaded machine judges the same: pruned once a second, the
  // history was on average half a second or more past its bound (its peak a
  // second or more); pruned every 100 ms, about a twentieth, and under a
  // loaded machine's late wakes well under a quarter.
  const double per_s = static_cast<double>(done) / seconds;
  const double mean_over_s = static_cast<double>(over_sum) / static_cast<double>(samples) / per_s;
  const double peak_over_s = static_cast<double>(peak - bound) / per_s;
  INFO(done << " cycles in " << seconds << " s (" << per_s << " a second); " << samples
            << " samples; past the bound of " << bound << " by " << mean_over_s
            << " s of claims on average, " << peak_over_s << " s at the peak (" << peak
            << " rows)");
  CHECK(failures.load() == 0);
  CHECK(done >= 2000);  // it did run, past the bound several times over
  CHECK(mean_over_s <= 0.25);
  CHECK(peak_over_s <= 1.5);  // and never ran away
  // The log's age in seconds of claims at this rate, beside its retention
  // (0.3 s): with no pruning it grows by the whole run (3 s and more).
  const double events_mean_s = static_cast<double>(events_sum) / samples / (2 * per_s);
  const double events_peak_s = static_cast<double>(events_peak) / (2 * per_s);
  INFO("the event log held " << events_mean_s << " s of events on average, " << events_peak_s
                             << " s at the peak (" << events_peak << " rows)");
  CHECK(events_mean_s <= 0.3 + 0.25);
  CHECK(events_peak_s <= 0.3 + 1.5);
}

}  // namespace
