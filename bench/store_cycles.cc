// store_cycles: durable claim+release cycles a second through the allocator
// and the shard's group-commit Writer, no HTTP. C client threads each run
// claim -> release in a closed loop over a pool of P containers; the same run
// measures the baseline of one autocommit transaction per statement on its
// own connection, so the figure is a ratio. Prints `name value unit`.

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "allocator/allocator.h"
#include "bench/bench_support.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace {

using bench::Clock;
using bench::ProcessCpuSeconds;

struct Options : bench::StoreOptions {
  int clients = 64;
  std::string sync = "full";
  bool coalesce = true;
};

double GroupCommitCycles(const Options& o, const std::string& path, uint64_t* doubles) {
  store::ShardMap map(path, 1);
  store::DbOptions dbo;
  dbo.sync = o.sync == "full" ? store::Sync::kFull : store::Sync::kNormal;
  dbo.coalesce_wal_writes = o.coalesce;
  std::vector<std::unique_ptr<store::Shard>> shards;
  if (auto s = store::OpenShards(map, dbo, {}, &shards); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  std::vector<store::Shard*> ptrs{shards[0].get()};
  store::SqliteStorage storage(ptrs, map, store::ClaimPolicy{});
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < o.containers; ++i) {
    specs.push_back({"c" + std::to_string(i), "bench", "default", i % 50, "{}"});
  }
  bench::Await<store::ContainerResult>([&](auto cb) { storage.Register(specs, cb); });
  allocator::Allocator alloc(&storage, {});
  // Each client is a chain of callbacks, not a thread: a release's callback
  // starts the next claim. The figure is then the store's, not the cost of
  // waking 64 threads on two cores.
  std::atomic<uint64_t> cycles{0};
  std::atomic<bool> stop{false};
  std::atomic<int> running{o.clients};
  std::function<void()> cycle = [&] {
    if (stop.load(std::memory_order_relaxed)) {
      running.fetch_sub(1);
      return;
    }
    store::ClaimRequest req;
    req.region = "bench";
    alloc.Claim(std::move(req), [&](store::SessionResult c) {
      if (c.outcome != store::Outcome::kOk) return cycle();
      alloc.Release({}, c.session.session_id, c.session.token, [&](store::SessionResult r) {
        if (r.outcome != store::Outcome::kOk) ++*doubles;  // a stolen container shows here
        cycles.fetch_add(1, std::memory_order_relaxed);
        cycle();
      });
    });
  };
  for (int t = 0; t < o.clients; ++t) cycle();
  auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds();
  uint64_t c0 = cycles.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.seconds * 1000)));
  uint64_t n = cycles.load() - c0;
  const double cpu = ProcessCpuSeconds() - cpu0;
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  // CPU a cycle is steadier than cycles a second on a shared machine.
  std::printf("store_cpu_us_per_cycle %.1f us\n", n ? cpu * 1e6 / n : 0.0);
  stop = true;
  while (running.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::printf("store_group_transactions %llu count\n",
              (unsigned long long)shards[0]->writer->stats().transactions.load());
  return n / secs;
}

// The baseline: the same statements, one autocommit transaction each.
double AutocommitCycles(const Options& o, const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, o.sync == "full" ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
               nullptr, nullptr, nullptr);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt *claim = nullptr, *release = nullptr;
  sqlite3_prepare_v2(db,
                     "UPDATE containers SET status='picked', generation=generation+1, "
                     "session_id=?1, tenant='default', lease_expires_at_ms=?2 WHERE id = "
                     "(SELECT id FROM (SELECT id FROM containers WHERE region='bench' AND "
                     "pool='default' AND status='available' ORDER BY latency_ms LIMIT 5) "
                     "ORDER BY RANDOM() LIMIT 1) RETURNING generation",
                     -1, &claim, nullptr);
  sqlite3_prepare_v2(db,
                     "UPDATE containers SET status='available', session_id=NULL, tenant=NULL, "
                     "lease_expires_at_ms=NULL WHERE session_id=?1 AND generation=?2",
                     -1, &release, nullptr);
  uint64_t n = 0;
  auto t0 = Clock::now();
  auto end = t0 + std::chrono::milliseconds(static_cast<int>(o.seconds * 1000));
  while (Clock::now() < end) {
    std::string sid = "s_auto_" + std::to_string(n);
    sqlite3_bind_text(claim, 1, sid.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(claim, 2, 1LL << 50);
    int64_t gen = -1;
    while (sqlite3_step(claim) == SQLITE_ROW) gen = sqlite3_column_int64(claim, 0);
    sqlite3_reset(claim);
    if (gen < 0) break;
    sqlite3_bind_text(release, 1, sid.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(release, 2, gen);
    sqlite3_step(release);
    sqlite3_reset(release);
    ++n;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  sqlite3_finalize(claim);
  sqlite3_finalize(release);
  sqlite3_close(db);
  return n / secs;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"store-level durable claim+release cycles: group commit against autocommit"};
  bench::AddStoreOptions(app, &o);
  app.add_option("--clients", o.clients);
  app.add_option("--sync", o.sync)->check(CLI::IsMember({"full", "normal"}));
  app.add_flag("!--no-coalesce", o.coalesce, "SQLite's own two pwrites a WAL frame (store/sqlite/wal_vfs.h)");
  CLI11_PARSE(app, argc, argv);
#ifndef NDEBUG
  std::printf("# WARNING: debug build; figures are not representative\n");
#endif
  std::printf("# sqlite %s, sync %s, cores %u, clients %d, containers %d\n", sqlite3_libversion(),
              o.sync.c_str(), std::thread::hardware_concurrency(), o.clients, o.containers);
  const std::string path = o.dir + "/store_cycles_" + std::to_string(::getpid()) + ".db";
  uint64_t stolen = 0;
  double group = GroupCommitCycles(o, path, &stolen);
  double autoc = AutocommitCycles(o, path);
  std::printf("store_durable_cycles_per_s %.0f 1/s\n", group);
  std::printf("store_autocommit_cycles_per_s %.0f 1/s\n", autoc);
  std::printf("group_vs_autocommit_ratio %.1f x\n", autoc > 0 ? group / autoc : 0);
  std::printf("double_allocations %llu count\n", (unsigned long long)stolen);
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::remove((path + suffix).c_str());
  return stolen ? 1 : 0;
}
