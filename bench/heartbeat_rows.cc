// heartbeat_rows: container rows a second that the heartbeat path writes
// durably, through the real Batcher and the shard's Writer, no HTTP. A feeder
// thread keeps the batcher's queue topped up (closed loop, requests of 100
// items, as a container fleet's requests would come); the same run measures
// --batch-max 100 and its baseline --batch-max 1 on the same file, so the
// figure is a ratio. Prints `name value unit`.
//
// Ids: `random` (the default) sends each request 100 distinct containers in
// a shuffled order, as independent containers' heartbeats interleave, so a
// batch touches rows all over the table; `sequential` sends consecutive ids
// (hb-0, hb-1, ...), as bench/heartbeats.sh's generator does, so a batch
// touches a few adjacent pages. Neither repeats an id inside a batch, so
// nothing is coalesced away: every heartbeat is a row written.

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/clock.h"
#include "bench/bench_support.h"
#include "batcher/batcher.h"
#include "store/sqlite/db.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace {

using bench::Clock;
using bench::ProcessCpuSeconds;

// Items a request, as bench/heartbeats.sh's generator sends them.
constexpr int kItemsPerRequest = 100;
// The feeder keeps at most this many batches' worth of items queued: enough
// that the batching thread never waits for input, few enough that Stop()
// drains the rest quickly even at --batch-max 1.
constexpr int kQueuedBatches = 8;

struct Options : bench::StoreOptions {
  Options() { containers = 10000; }
  double warmup = 0.5;
  int batch = 100;
  std::string sync = "full";
  std::string ids = "random";
  bool baseline = true;
};

void Check(const store::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

// Registers containers hb-0 .. hb-(n-1), available, in chunks of one
// transaction each.
void Register(store::Shard* shard, int n) {
  static constexpr char kInsertSql[] =
      "INSERT INTO containers (id, region, pool, status, latency_ms, last_heartbeat_ms) "
      "VALUES (?1, 'hb', 'default', 'available', ?2, ?3)";
  constexpr int kChunk = 5000;
  for (int start = 0; start < n; start += kChunk) {
    Check(shard->writer->RunSync(
              [&](store::Db* db) {
                store::Status st;
                for (int i = start; i < std::min(n, start + kChunk); ++i) {
                  store::StatementRef q;
                  RETURN_IF_ERROR(db->Cached(kInsertSql, &q));
                  q->Bind(1, "hb-" + std::to_string(i));
                  q->Bind(2, i % 50);
                  q->Bind(3, base::NowMs());
                  st = q->Run();
                  if (!st.ok()) return st;
                }
                return st;
              },
              /*solo=*/true),
          "register");
  }
}

struct Figures {
  double rows_per_s = 0;
  double cpu_us_per_row = 0;
  double rows_per_transaction = 0;
  uint64_t lost = 0;
};

// One closed-loop run at --batch-max `batch` on `shard`.
Figures Run(const Options& o, store::Shard* shard, const store::ShardMap& map, int batch) {
  batcher::BatcherOptions bo;
  bo.batch_max = batch;
  bo.batch_wait_ms = 10;
  bo.queue_capacity = 1000000;
  bo.dead_after_ms = 3600000;  // the reaper finds nothing to do
  store::SqliteStorage storage({shard}, map, store::ClaimPolicy{});
  batcher::Batcher b(&storage, bo);
  b.Start();

  // The order ids are sent in: a permutation, walked round and round.
  std::vector<std::string> ids(static_cast<size_t>(o.containers));
  for (int i = 0; i < o.containers; ++i) ids[static_cast<size_t>(i)] = "hb-" + std::to_string(i);
  if (o.ids == "random") std::shuffle(ids.begin(), ids.end(), std::mt19937(42));

  const int64_t high_water = std::max(kQueuedBatches * batch, 2 * kItemsPerRequest);
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    size_t next = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      if (b.QueueDepth() >= high_water) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      std::vector<batcher::Heartbeat> items(kItemsPerRequest);
      const int64_t now = base::NowMs();
      for (batcher::Heartbeat& h : items) {
        h.container_id = ids[next];
        next = (next + 1) % ids.size();
        h.ts_ms = now;
        h.load = 0.5;
        h.accepted_ms = now;
      }
      if (!b.Submit(std::move(items)).accepted()) {
        std::fprintf(stderr, "feeder: request refused\n");
        std::exit(1);
      }
    }
  });

  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.warmup * 1000)));
  const uint64_t w0 = b.stats().written.load();
  const uint64_t t0 = shard->writer->stats().transactions.load();
  const double cpu0 = ProcessCpuSeconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.seconds * 1000)));
  const uint64_t w1 = b.stats().written.load();
  const uint64_t t1 = shard->writer->stats().transactions.load();
  const double cpu = ProcessCpuSeconds() - cpu0;
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  feeder.join();
  b.Stop();

  Figures f;
  const double rows = static_cast<double>(w1 - w0);
  f.rows_per_s = rows / secs;
  f.cpu_us_per_row = rows > 0 ? cpu * 1e6 / rows : 0;
  f.rows_per_transaction = t1 > t0 ? rows / static_cast<double>(t1 - t0) : 0;
  f.lost = b.stats().lost.load();
  const uint64_t accounted = b.stats().written.load() + b.stats().coalesced.load() +
                             b.stats().unknown.load() + b.stats().lost.load();
  if (accounted != b.stats().accepted.load()) {
    std::fprintf(stderr, "accepted %llu but accounted for %llu\n",
                 (unsigned long long)b.stats().accepted.load(), (unsigned long long)accounted);
    std::exit(1);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"heartbeat rows written durably a second, batch --batch against batch 1, no HTTP"};
  bench::AddStoreOptions(app, &o, kItemsPerRequest);
  app.add_option("--warmup", o.warmup);
  app.add_option("--batch", o.batch, "the batch size measured against 1")
      ->check(CLI::Range(1, batcher::kMaxBatchRows));
  app.add_option("--sync", o.sync)->check(CLI::IsMember({"full", "normal"}));
  app.add_option("--ids", o.ids, "random or sequential (see the top of heartbeat_rows.cc)")
      ->check(CLI::IsMember({"random", "sequential"}));
  app.add_flag("!--no-baseline", o.baseline, "skip the batch-1 run (for profiling the batch run)");
  CLI11_PARSE(app, argc, argv);
#ifndef NDEBUG
  std::printf("# WARNING: debug build; figures are not representative\n");
#endif
#ifdef EDGEALLOC_BUILD_TYPE
  std::printf("# build %s\n", EDGEALLOC_BUILD_TYPE);
#endif
  std::printf("# sqlite %s, sync %s, cores %u, containers %d, ids %s, requests of %d items\n",
              sqlite3_libversion(), o.sync.c_str(), std::thread::hardware_concurrency(),
              o.containers, o.ids.c_str(), kItemsPerRequest);

  const std::string path = o.dir + "/heartbeat_rows_" + std::to_string(::getpid()) + ".db";
  store::ShardMap map(path, 1);
  store::DbOptions dbo;
  dbo.sync = o.sync == "full" ? store::Sync::kFull : store::Sync::kNormal;
  std::vector<std::unique_ptr<store::Shard>> shards;
  Check(store::OpenShards(map, dbo, {}, &shards), "open");
  Register(shards[0].get(), o.containers);

  const Figures big = Run(o, shards[0].get(), map, o.batch);
  const Figures one = o.baseline ? Run(o, shards[0].get(), map, 1) : Figures();
  shards[0]->writer->Stop();
  shards.clear();
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::remove((path + suffix).c_str());

  const std::string b = "b" + std::to_string(o.batch);
  std::printf("%s_cpu_us_per_row %.1f us\n", b.c_str(), big.cpu_us_per_row);
  std::printf("%s_rows_per_transaction %.1f count\n", b.c_str(), big.rows_per_transaction);
  std::printf("b1_cpu_us_per_row %.1f us\n", one.cpu_us_per_row);
  std::printf("b1_rows_per_transaction %.2f count\n", one.rows_per_transaction);
  std::printf("heartbeat_rows_per_s %.0f 1/s\n", big.rows_per_s);
  std::printf("heartbeat_batch1_rows_per_s %.0f 1/s\n", one.rows_per_s);
  std::printf("heartbeat_batch_ratio %.1f x\n", one.rows_per_s > 0 ? big.rows_per_s / one.rows_per_s : 0);
  std::printf("heartbeat_rows_lost %llu count\n", (unsigned long long)(big.lost + one.lost));
  return big.lost + one.lost ? 1 : 0;
}
