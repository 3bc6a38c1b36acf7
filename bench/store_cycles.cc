// store_cycles: durable claim+release cycles a second through the allocator
// and the shard's group-commit Writer, no HTTP. C client threads each run
// claim -> release in a closed loop over a pool of P containers; the same run
// measures the baseline of one autocommit transaction per statement on its
// own connection, so the figure is a ratio. Prints `name value unit`. With
// --cycles N it runs until N cycles are done instead of for --seconds, and
// skips the baseline: a run whose length is the cost of N cycles, for a tool
// that times whole processes against another build's.

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "allocator/allocator.h"
#include "bench/bench_support.h"
#include "bench/cycle_chains.h"
#include "base/clock.h"
#include "store/sqlite/claim_sql.h"
#include "store/sqlite/db.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace {

using bench::Clock;
using bench::CycleChains;
using bench::ProcessCpuSeconds;

struct Options : bench::StoreOptions {
  int clients = 64;
  int64_t cycles = 0;  // > 0: run until this many, not for --seconds
  std::string sync = "full";
  bool coalesce = true;
  bool without_events = false;  // the event log's triggers dropped: its cost, by difference
  bool baseline = true;         // the autocommit run after the group-commit one
};

// Drops every trigger that writes the event log (store/sqlite/events_sql.h),
// through a connection of its own, before the storage prepares a statement:
// the same file and statements, with no event written.
void DropEventTriggers(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  std::vector<std::string> names;
  const char* list =
      "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'events\\_%' ESCAPE "
      "'\\'";
  sqlite3_exec(
      db, list,
      [](void* out, int, char** row, char**) {
        static_cast<std::vector<std::string>*>(out)->push_back(row[0]);
        return 0;
      },
      &names, nullptr);
  for (const auto& name : names) {
    sqlite3_exec(db, ("DROP TRIGGER " + name).c_str(), nullptr, nullptr, nullptr);
  }
  sqlite3_close(db);
  std::printf("# event log off: %zu triggers dropped\n", names.size());
}

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
  if (o.without_events) DropEventTriggers(map.PathOf(0));
  std::vector<store::Shard*> ptrs{shards[0].get()};
  store::SqliteStorage storage(ptrs, map, store::ClaimPolicy{});
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < o.containers; ++i) {
    specs.push_back({"c" + std::to_string(i), "bench", "default", i % 50, "{}"});
  }
  bench::Await<store::ContainerResult>([&](auto cb) { storage.Register(specs, cb); });
  allocator::Allocator alloc(&storage, {});
  CycleChains chains(&alloc, [] {
    store::ClaimRequest req;
    req.region = "bench";
    return req;
  });
  chains.Start(o.clients);
  auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds();
  uint64_t c0 = chains.cycles();
  if (o.cycles > 0) {
    while (chains.cycles() - c0 < static_cast<uint64_t>(o.cycles)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.seconds * 1000)));
  }
  uint64_t n = chains.cycles() - c0;
  const double cpu = ProcessCpuSeconds() - cpu0;
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  // CPU a cycle is steadier than cycles a second on a shared machine.
  std::printf("store_cpu_us_per_cycle %.1f us\n", n ? cpu * 1e6 / n : 0.0);
  chains.Stop();
  *doubles += chains.bad_releases();  // a stolen container shows here
  std::printf("store_group_transactions %llu count\n",
              (unsigned long long)shards[0]->writer->stats().transactions.load());
  return n / secs;
}

// The baseline: the same statements (the claim and its session's row, the
// release and its slot freed), one transaction a claim and one a release,
// each its own commit, on one connection (a store::Db, as the writer's: the
// claim hands back what it took through the connection's Took).
double AutocommitCycles(const Options& o, const std::string& path) {
  store::DbOptions options;
  options.sync = o.sync == "full" ? store::Sync::kFull : store::Sync::kNormal;
  std::unique_ptr<store::Db> db;
  if (store::Status s = store::Db::Open(path, options, &db); !s.ok()) {
    std::fprintf(stderr, "store_cycles: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  auto run = [](store::Status s) {
    if (!s.ok()) {
      std::fprintf(stderr, "store_cycles: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  };
  uint64_t n = 0;
  auto t0 = Clock::now();
  auto end = t0 + std::chrono::milliseconds(static_cast<int>(o.seconds * 1000));
  while (Clock::now() < end) {
    const std::string sid = "s_auto_" + std::to_string(n);
    const int64_t now = base::NowMs();
    run(db->Exec("BEGIN IMMEDIATE"));
    {
      store::StatementRef claim;
      run(db->Cached(store::sql::kClaimFittest, &claim));
      claim->Bind(1, "bench");
      claim->Bind(2, "default");
      claim->Bind(3, int64_t{0});
      claim->Bind(4, int64_t{5});
      claim->Bind(5, "default");
      claim->BindNull(6);
      claim->Bind(7, int64_t{-1});
      db->took().any = false;
      run(claim->Run());
    }
    if (db->Changes() != 1 || !db->took().any) {
      run(db->Exec("ROLLBACK"));
      break;
    }
    const store::Took took = db->took();
    {
      store::StatementRef insert;
      run(db->Cached(store::sql::kInsertSession, &insert));
      insert->Bind(1, sid);
      insert->Bind(2, took.container_id);
      insert->Bind(3, took.slot);
      insert->Bind(4, took.generation);
      insert->Bind(5, "default");
      insert->BindNull(6);
      insert->Bind(7, int64_t{1} << 50);
      insert->Bind(8, now);
      insert->BindNull(9);
      run(insert->Run());
    }
    run(db->Exec("COMMIT"));
    run(db->Exec("BEGIN IMMEDIATE"));
    {
      store::StatementRef release;
      run(db->Cached(store::sql::kRelease, &release));
      release->Bind(1, sid);
      release->Bind(2, took.generation);
      release->BindNull(3);
      release->Bind(4, now);
      run(release->Run());
      store::StatementRef free_slot;
      run(db->Cached(store::sql::kFreeSlot, &free_slot));
      free_slot->Bind(1, took.container_id);
      free_slot->Bind(2, took.slot);
      run(free_slot->Run());
    }
    run(db->Exec("COMMIT"));
    ++n;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return n / secs;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"store-level durable claim+release cycles: group commit against autocommit"};
  bench::AddStoreOptions(app, &o);
  app.add_option("--clients", o.clients);
  app.add_option("--cycles", o.cycles, "run until this many cycles, no baseline (0: --seconds)");
  app.add_option("--sync", o.sync)->check(CLI::IsMember({"full", "normal"}));
  app.add_flag("!--no-coalesce", o.coalesce, "SQLite's own two pwrites a WAL frame (store/sqlite/wal_vfs.h)");
  app.add_flag("--without-events", o.without_events,
               "drop the event log's triggers first (bench/events.sh: what the log costs)");
  app.add_flag("!--no-baseline", o.baseline, "skip the autocommit run");
  CLI11_PARSE(app, argc, argv);
#ifndef NDEBUG
  std::printf("# WARNING: debug build; figures are not representative\n");
#endif
  std::printf("# sqlite %s, sync %s, cores %u, clients %d, containers %d\n", sqlite3_libversion(),
              o.sync.c_str(), std::thread::hardware_concurrency(), o.clients, o.containers);
  const std::string path = o.dir + "/store_cycles_" + std::to_string(::getpid()) + ".db";
  uint64_t stolen = 0;
  double group = GroupCommitCycles(o, path, &stolen);
  double autoc = o.cycles > 0 || !o.baseline ? 0 : AutocommitCycles(o, path);
  std::printf("store_durable_cycles_per_s %.0f 1/s\n", group);
  std::printf("store_autocommit_cycles_per_s %.0f 1/s\n", autoc);
  std::printf("group_vs_autocommit_ratio %.1f x\n", autoc > 0 ? group / autoc : 0);
  std::printf("double_allocations %llu count\n", (unsigned long long)stolen);
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::remove((path + suffix).c_str());
  return stolen ? 1 : 0;
}
