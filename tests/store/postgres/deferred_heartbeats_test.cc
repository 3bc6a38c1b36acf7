#include "store/postgres/deferred_heartbeats.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <vector>

namespace {

using store::DeferredHeartbeats;
using store::HeartbeatRow;
using store::HeartbeatWriteResult;
using store::Status;

HeartbeatRow Row(const std::string& id, int64_t accepted_ms, int64_t ts_ms, double load) {
  HeartbeatRow row;
  row.container_id = id;
  row.accepted_ms = accepted_ms;
  row.ts_ms = ts_ms;
  row.load = load;
  return row;
}

HeartbeatWriteResult Skipped(std::vector<size_t> indexes) {
  HeartbeatWriteResult r;
  r.skipped = std::move(indexes);
  return r;
}

// The writer's gauges as End gives them.
struct Counts {
  uint64_t skipped = 0;
  int64_t deferred = -1;
  void operator()(uint64_t s, int64_t d) {
    skipped += s;
    deferred = d;
  }
};

// Each test's partition: its deferred rows, the gauges End gave, and the
// rows its Begin took.
struct Deferred {
  DeferredHeartbeats d;
  Counts counts;
  std::vector<HeartbeatRow> taken;
};

}  // namespace

TEST_CASE_METHOD(Deferred,
                 "deferred_heartbeats: a skipped row is taken by the next write, and holds the "
                 "watermark") {
  REQUIRE(d.Begin(/*wait=*/true, &taken));
  CHECK(taken.empty());
  const std::vector<HeartbeatRow> batch = {Row("a", 1000, 1, 0.1), Row("b", 1100, 1, 0.2)};
  d.End(batch, 0, Status::Ok(), Skipped({1}), std::ref(counts));
  CHECK(counts.skipped == 1);
  CHECK(counts.deferred == 1);
  CHECK(d.OldestHeldBackMs() == 1100);

  REQUIRE(d.Begin(/*wait=*/true, &taken));
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].container_id == "b");
  CHECK(d.OldestHeldBackMs() == 1100);  // taken, not stored yet
  d.End(taken, taken.size(), Status::Ok(), HeartbeatWriteResult{}, std::ref(counts));
  CHECK(counts.deferred == 0);
  CHECK(d.OldestHeldBackMs() == 0);
}

TEST_CASE_METHOD(Deferred,
                 "deferred_heartbeats: a container skipped twice keeps one row, its newest report, "
                 "held since its oldest") {
  REQUIRE(d.Begin(true, &taken));
  d.End({Row("a", 1000, 5, 0.5)}, 0, Status::Ok(), Skipped({0}), std::ref(counts));
  REQUIRE(d.Begin(true, &taken));
  REQUIRE(taken.size() == 1);
  // The deferred row went first and was skipped again, with a newer report.
  std::vector<HeartbeatRow> batch = taken;
  batch.push_back(Row("a", 2000, 6, 0.7));
  d.End(batch, taken.size(), Status::Ok(), Skipped({0, 1}), std::ref(counts));
  CHECK(counts.deferred == 1);
  CHECK(d.OldestHeldBackMs() == 1000);
  REQUIRE(d.Begin(true, &taken));
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].ts_ms == 6);
  CHECK(taken[0].load == 0.7);
  CHECK(taken[0].accepted_ms == 2000);
  d.End(taken, taken.size(), Status::Ok(), HeartbeatWriteResult{}, std::ref(counts));
}

TEST_CASE_METHOD(
    Deferred, "deferred_heartbeats: a failed write keeps the rows it took back, not the caller's") {
  REQUIRE(d.Begin(true, &taken));
  d.End({Row("a", 1000, 1, 0.1)}, 0, Status::Ok(), Skipped({0}), std::ref(counts));
  REQUIRE(d.Begin(true, &taken));
  std::vector<HeartbeatRow> batch = taken;
  batch.push_back(Row("c", 3000, 1, 0.3));  // the caller's: its to retry
  d.End(batch, taken.size(), Status::IOError("connection lost"), HeartbeatWriteResult{},
        std::ref(counts));
  CHECK(counts.deferred == 1);
  CHECK(d.OldestHeldBackMs() == 1000);
  REQUIRE(d.Begin(true, &taken));
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].container_id == "a");
  d.End(taken, taken.size(), Status::Ok(), HeartbeatWriteResult{}, std::ref(counts));
}

TEST_CASE_METHOD(Deferred,
                 "deferred_heartbeats: one write at a time, and the flush does not wait for one "
                 "under way") {
  REQUIRE(d.Begin(true, &taken));
  std::vector<HeartbeatRow> other;
  CHECK_FALSE(d.Begin(/*wait=*/false, &other));
  auto second = std::async(std::launch::async, [&] {
    std::vector<HeartbeatRow> rows;
    return d.Begin(/*wait=*/true, &rows) ? rows.size() : size_t{999};
  });
  CHECK(second.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  d.End({Row("a", 1000, 1, 0.1)}, 0, Status::Ok(), Skipped({0}), std::ref(counts));
  REQUIRE(second.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(second.get() == 1);  // it began after the End, and took its row
}
