// Several nodes on one PostgreSQL database: every node's reaper sweeps the
// whole fleet, so each must wait for the reports the others accepted and
// still write. A node publishes each lane's "heard until" (its watermark)
// and every sweep judges no silence past the least of the live nodes'
// (store/postgres/sweep_sql.h EDGEALLOC_PG_SILENT_BEFORE). And a report the
// store held back for a row lock stays pending until it is stored.

#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "batcher/batcher.h"
#include "store/postgres/db_clock.h"
#include "store/postgres/pg.h"
#include "tests/batcher/reports.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/forwarding_storage.h"
#include "tests/support/eventually.h"

namespace {

using batcher::Batcher;
using batcher::BatcherOptions;
using std::chrono::milliseconds;
using testing::Beat;
using testing::StatusOf;

void SleepMs(int64_t ms) { std::this_thread::sleep_for(milliseconds(ms)); }

// Polls `done` every 5 ms for at most `bound_ms`; whether it came true.
bool Within(int64_t bound_ms, const std::function<bool()>& done) {
  return testing::Eventually(done, milliseconds(bound_ms));
}

// Node B's store: its heartbeat writes take `delay_ms` while `slow` is set
// (a database restarting, a slow fsync), and fail while `failing` is (its
// link to the database cut); its sweeps and publishes do neither.
class SlowWrites : public testing::ForwardingStorage {
 public:
  using ForwardingStorage::ForwardingStorage;
  std::atomic<bool> slow{false};
  std::atomic<bool> failing{false};
  std::atomic<int64_t> delay_ms{0};
  store::Status WriteHeartbeats(int partition, const std::vector<store::HeartbeatRow>& rows,
                                store::HeartbeatWriteResult* result) override {
    if (failing.load()) return store::Status::IOError("injected: node B cannot write");
    if (slow.load()) SleepMs(delay_ms.load());
    return ForwardingStorage::WriteHeartbeats(partition, rows, result);
  }
};

BatcherOptions Options() {
  BatcherOptions options;
  options.dead_after_ms = 400;
  options.reaper_interval_ms = 20;
  return options;
}

void RegisterAll(store::Storage* storage, const std::vector<std::string>& ids) {
  std::vector<store::ContainerSpec> specs;
  for (const std::string& id : ids) specs.push_back({id, "weur", "chrome", 0, "{}"});
  store::ContainerResult r = testing::Await<store::ContainerResult>(
      [&](auto cb) { storage->Register(specs, cb); });
  REQUIRE(r.outcome == store::Outcome::kOk);
}

// Nodes A and B on one database, c-1 and c-2 registered, both batchers
// started; B's heartbeat writes go through SlowWrites.
struct TwoNodes {
  TwoNodes()
      : node_b(engine.Open()),
        a(engine.storage.get(), Options()),
        b_store(node_b.get()),
        b(&b_store, Options()) {
    RegisterAll(engine.storage.get(), {"c-1", "c-2"});
    a.Start();
    b.Start();
  }
  testing::Engine engine{"postgres", {}, /*pg_writers=*/1};
  std::unique_ptr<store::Storage> node_b;
  Batcher a;
  SlowWrites b_store;
  Batcher b;
};

int64_t LastHeartbeatMs(testing::Engine& engine, const std::string& id) {
  return std::stoll(testing::SharedPg().Query(
      engine.db, "SELECT last_heartbeat_ms FROM containers WHERE id = '" + id + "'"));
}

int64_t DiedAtMs(testing::Engine& engine, const std::string& id) {
  return std::stoll(testing::SharedPg().Query(
      engine.db, "SELECT died_at_ms FROM containers WHERE id = '" + id + "'"));
}

}  // namespace

// c-1 reports to node B every 20 ms, every report accepted, while B's lane
// writes take 2.5 times dead_after: its stored stamp falls up to two writes
// behind. Node A, whose own lane is idle, sweeps the same containers every
// 20 ms; it must not take c-1 for dead. c-2 stops reporting when B slows
// down: it still dies, no sooner than dead_after after its last report,
// while B is still slow. Once B is gone (stopped: it publishes no more), a
// container silent since is killed, no sooner than dead_after after its
// last report (within about two: one for B's row to age, one of silence).
TEST_CASE("heard nodes: a node sweeping waits for another node's lagging lane, and still "
          "kills the silent") {
  TwoNodes nodes;
  auto& [engine, node_b, a, b_store, b] = nodes;
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  REQUIRE(b.Submit(Beat("c-2")).accepted());
  REQUIRE(Within(10000, [&] { return b.stats().written.load() >= 2; }));
  const int64_t c2_last = LastHeartbeatMs(engine, "c-2");

  b_store.delay_ms = 1000;
  b_store.slow = true;
  const testing::LagWatch watch =
      testing::ReportWhileLagging(b, engine.storage.get(), "c-1", "c-2");
  CHECK(watch.max_lag_ms > 400);  // B's lane did lag past dead_after
  CHECK_FALSE(watch.reporter_dead);
  REQUIRE(watch.silent_dead);
  CHECK(b_store.slow.load());
  // Not before dead_after of silence, by the database's clock.
  CHECK(DiedAtMs(engine, "c-2") - c2_last >= 400);
  // A sweep counts its deaths once its write has returned, a moment after
  // the status it wrote can be read.
  const auto deaths = [&] { return a.stats().dead_marked.load() + b.stats().dead_marked.load(); };
  CHECK(Within(2000, [&] { return deaths() == 1; }));
  CHECK(b.hearing().spans(batcher::Hearing::Cause::kWriteFailing) == 0);

  // B's writes are fast again; c-1 goes on reporting until B's slow write
  // is done, then goes silent, and B goes away (it publishes no more).
  b_store.slow = false;
  const int64_t fast_from = base::NowMs();
  while (base::NowMs() - fast_from < 1500) {
    REQUIRE(b.Submit(Beat("c-1")).accepted());
    SleepMs(20);
  }
  b.Stop();
  const int64_t c1_last = LastHeartbeatMs(engine, "c-1");
  CHECK(c1_last >= fast_from);
  const int64_t b_gone = base::NowMs();
  CHECK(Within(10000, [&] { return StatusOf(engine.storage.get(), "c-1") == "dead"; }));
  INFO("c-1 dead " << base::NowMs() - b_gone << " ms after B stopped");
  CHECK(DiedAtMs(engine, "c-1") - c1_last >= 400);
  CHECK(Within(2000, [&] { return deaths() == 2; }));
  a.Stop();
  engine->StopWriters();
  node_b->StopWriters();
}

// Node B cannot write heartbeats for 2.5 times dead_after (its reports are
// refused meanwhile); c-1 reported to it just before, and again right after,
// a report slow to write. Node A heard all along: the time B could not hear
// is no silence of c-1's, so A must not end it while B still writes its
// report (B publishes its "heard until" with its deafness passed over).
TEST_CASE("heard nodes: another node's deafness is no silence of the containers reporting "
          "to it") {
  TwoNodes nodes;
  auto& [engine, node_b, a, b_store, b] = nodes;
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  REQUIRE(Within(10000, [&] { return b.stats().written.load() >= 1; }));
  b_store.failing = true;
  REQUIRE(b.Submit(Beat("c-2")).accepted());  // retried: B is deaf
  SleepMs(1000);
  b_store.failing = false;
  REQUIRE(Within(10000, [&] { return b.stats().written.load() >= 2; }));
  b_store.delay_ms = 1500;
  b_store.slow = true;
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  // Past dead_after of B's hearing again, while c-1's report is written.
  SleepMs(1000);
  CHECK(b.stats().written.load() == 2);
  CHECK(StatusOf(engine.storage.get(), "c-1") == "available");
  CHECK(a.stats().dead_marked.load() + b.stats().dead_marked.load() <= 1);  // c-2 at most
  REQUIRE(Within(10000, [&] { return b.stats().written.load() >= 3; }));
  b.Stop();
  a.Stop();
  engine->StopWriters();
  node_b->StopWriters();
}

// A report whose row another transaction keeps locked is answered ok by
// the store and kept to write later (PostgreSQL's deferral): it is still
// pending for the batcher, holding the lane's watermark from its
// acceptance, until the lock goes and it is stored.
TEST_CASE("heard nodes: a heartbeat held back for a row lock stays pending until stored") {
  testing::Engine engine("postgres", {}, /*pg_writers=*/1);
  RegisterAll(engine.storage.get(), {"c-1"});
  testing::SharedPg().Query(engine.db, "UPDATE containers SET last_heartbeat_ms = 1");
  BatcherOptions options = Options();
  options.dead_after_ms = 60000;  // the reaper flushes; nothing is judged
  Batcher b(engine.storage.get(), options);
  b.Start();

  std::unique_ptr<store::PgConn> outside;
  REQUIRE(store::PgConn::Connect(engine.db, "outside", &outside).ok());
  REQUIRE(outside->Exec("BEGIN; SELECT 1 FROM containers WHERE id = 'c-1' FOR UPDATE").ok());
  const int64_t accepted_from = base::NowMs();
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  const store::WriterStats& stats = engine->writer_stats(0);
  REQUIRE(Within(10000, [&] { return stats.heartbeat_rows_deferred.load() == 1; }));
  // The batch came back ok, c-1's row skipped; 300 ms on it is still pending.
  REQUIRE(Within(10000, [&] { return b.stats().batches.load() >= 1; }));
  SleepMs(300);
  CHECK(LastHeartbeatMs(engine, "c-1") == 1);
  CHECK(b.LagMs(0) >= 300);
  CHECK(b.LagMs(0) <= base::NowMs() - accepted_from + 1);

  REQUIRE(outside->Exec("COMMIT").ok());
  // The reaper's sweep writes it; pending no more.
  CHECK(Within(10000, [&] { return b.LagMs(0) == 0; }));
  CHECK(LastHeartbeatMs(engine, "c-1") > 1);
  CHECK(stats.heartbeat_rows_deferred.load() == 0);
  b.Stop();
  engine->StopWriters();
}

// A step of the database's clock shifted for moves the published "heard
// until" instants, and their stamps, with the containers' stamps they are
// compared with (store/postgres/clock_sql.h).
TEST_CASE("heard nodes: a shift for a step of the database's clock moves the published "
          "instants too") {
  testing::Engine engine("postgres", {}, /*pg_writers=*/1);
  RegisterAll(engine.storage.get(), {"c-1"});
  // Published once the writer has measured its offset from the database.
  REQUIRE(Within(10000, [&] { return engine->PublishHeardUntil({base::NowMs()}, 400).ok(); }));
  const std::string kInstants =
      "SELECT (SELECT heard_until_ms || '/' || updated_ms FROM node_heard_until) || '/' || "
      "(SELECT last_heartbeat_ms FROM containers)";
  const auto instants = [&] {
    std::vector<int64_t> v;
    std::string text = testing::SharedPg().Query(engine.db, kInstants);
    for (size_t at = 0; at <= text.size();) {
      const size_t slash = std::min(text.find('/', at), text.size());
      v.push_back(std::stoll(text.substr(at, slash - at)));
      at = slash + 1;
    }
    return v;
  };
  const std::vector<int64_t> before = instants();
  REQUIRE(before.size() == 3);
  std::unique_ptr<store::PgConn> conn;
  REQUIRE(store::PgConn::Connect(engine.db, "shift", &conn).ok());
  REQUIRE(conn->Exec("BEGIN").ok());
  REQUIRE(store::ClaimClockShift(conn.get(), /*expected_shifts=*/0, 5000).ok());
  REQUIRE(conn->Exec("COMMIT").ok());
  const std::vector<int64_t> after = instants();
  REQUIRE(after.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(after[i] - before[i] == 5000);
  engine->StopWriters();
}
