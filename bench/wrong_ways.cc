// wrong_ways: the two claims the seeds warn about, beside ours, under the same
// load: C client threads, each claim -> hold -> release in a closed
// loop, over the same P containers of one WAL database, synchronous=FULL.
//
//   naive   each thread on its own SQLite connection: SELECT the K cheapest
//           available ids, pick one at random, then a separate blind
//           `UPDATE ... SET status='picked' WHERE id=?` (no status guard, no
//           compare-and-swap), as an ORM's find-then-save would.
//   mirror  threads pick at random among the K cheapest ids of a snapshot of
//           the available ones that a background thread re-reads every R ms
//           on its own read connection (as the KV mirror does), then the same
//           blind UPDATE. The same candidate rule as ours and naive's: only
//           where the truth comes from differs.
//   ours    the real claim: allocator::Allocator over the SQLite storage.
//
// Every way keeps the same book of who holds what in memory: a claim that
// hands a container to a second live holder is counted. Releases are guarded
// by the session in all three, so that whatever is counted comes from the
// claim alone. Prints `name value unit`; exits 1 if ours ever double-allocates.

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>

#include "allocator/allocator.h"
#include "base/clock.h"
#include "bench/bench_support.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace {

using bench::Clock;

struct Options : bench::StoreOptions {
  int clients = 64;
  int hold_us = 5000;
  int candidates = 5;  // K, as the server's --candidates
  int refresh_ms = 100;
};

constexpr char kRegion[] = "bench";
constexpr char kPool[] = "default";

// The wrong ways' statements, on the real schema (store/sqlite/schema.cc).
constexpr char kSelectCandidates[] = R"sql(
SELECT id FROM containers
WHERE region = ?1 AND pool = ?2 AND status = 'available'
ORDER BY latency_ms LIMIT ?3
)sql";
constexpr char kSelectAvailable[] = R"sql(
SELECT id FROM containers
WHERE region = ?1 AND pool = ?2 AND status = 'available'
ORDER BY latency_ms
)sql";
// The flaw: nothing here says the row is still available. It takes the
// container's one slot (the bench's containers have one, as the schema's
// CHECK between status and slots_used wants) and returns the generation it
// wrote, which stands for the session: the wrong ways keep no sessions rows,
// and their release is guarded by that generation.
constexpr char kBlindPick[] = R"sql(
UPDATE containers
SET status = 'picked', slots_used = slots, generation = generation + 1
WHERE id = ?1
RETURNING generation
)sql";
constexpr char kRelease[] = R"sql(
UPDATE containers
SET status = 'available', slots_used = 0
WHERE id = ?1 AND generation = ?2
)sql";
// Every container free again, and no sessions left over from a run of ours.
constexpr char kResetAll[] = R"sql(
DELETE FROM sessions;
UPDATE containers
SET status = 'available', slots_used = 0, slot_map = '0'
WHERE status = 'picked'
)sql";

// Holders is the clients' own book of live sessions a container: a second
// live holder is a double allocation. A holder is entered after its claim
// committed and removed before its release is sent (once sent, the container
// may rightly be handed on), so a correct claim never shows here. Safe from
// any thread.
class Holders {
 public:
  void Take(const std::string& container) {
    std::lock_guard<std::mutex> l(mu_);
    if (live_[container]++ > 0) ++doubles_;
    if (++sessions_ > peak_sessions_) peak_sessions_ = sessions_;
  }
  void Drop(const std::string& container) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = live_.find(container);
    if (--it->second == 0) live_.erase(it);
    --sessions_;
  }
  uint64_t doubles() {
    std::lock_guard<std::mutex> l(mu_);
    return doubles_;
  }
  int64_t peak_sessions() {
    std::lock_guard<std::mutex> l(mu_);
    return peak_sessions_;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, int> live_;  // GUARDED_BY(mu_)
  uint64_t doubles_ = 0;                       // GUARDED_BY(mu_)
  int64_t sessions_ = 0, peak_sessions_ = 0;   // GUARDED_BY(mu_)
};

struct Result {
  double cycles_per_s = 0;
  uint64_t doubles = 0;
  int64_t peak_sessions = 0;
  uint64_t errors = 0;
  uint64_t no_capacity = 0;
};

// Counters the client threads share.
struct Tally {
  std::atomic<uint64_t> cycles{0}, errors{0}, no_capacity{0};
};

// What a way's run measured: its rate, and what the book and counters saw.
Result Measured(double cycles_per_s, Holders* holders, const Tally& tally) {
  Result r;
  r.cycles_per_s = cycles_per_s;
  r.doubles = holders->doubles();
  r.peak_sessions = holders->peak_sessions();
  r.errors = tally.errors;
  r.no_capacity = tally.no_capacity;
  return r;
}

// Runs `client(thread_index, stop)` on o.clients threads for o.seconds and
// returns cycles a second over that window. A thread still waiting on a lock
// when the window closes finishes its cycle, uncounted.
double RunClients(const Options& o, Tally* tally,
                  const std::function<void(int, const std::atomic<bool>&)>& client) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < o.clients; ++t) threads.emplace_back(client, t, std::cref(stop));
  auto t0 = Clock::now();
  uint64_t c0 = tally->cycles.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.seconds * 1000)));
  uint64_t n = tally->cycles.load() - c0;
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();
  return n / secs;
}

void Hold(const Options& o) {
  if (o.hold_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.hold_us));
}

void Die(const std::string& what) {
  std::fprintf(stderr, "wrong_ways: %s\n", what.c_str());
  std::exit(2);
}

// A plain connection, as an application without our store layer opens one.
sqlite3* Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) Die("open " + path);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  return db;
}

sqlite3_stmt* Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) Die(sqlite3_errmsg(db));
  return st;
}

std::vector<std::string> Ids(sqlite3_stmt* st) {
  std::vector<std::string> ids;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ids.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_reset(st);
  return ids;
}

// One client's connection and statements for the two wrong ways.
struct PlainClient {
  sqlite3* db;
  sqlite3_stmt *select, *pick, *release;
  explicit PlainClient(const std::string& path) : db(Open(path)) {
    select = Prepare(db, kSelectCandidates);
    pick = Prepare(db, kBlindPick);
    release = Prepare(db, kRelease);
  }
  ~PlainClient() {
    for (sqlite3_stmt* st : {select, pick, release}) sqlite3_finalize(st);
    sqlite3_close(db);
  }

  // The blind UPDATE: the generation it wrote, or -1 if SQLite said no (busy
  // past the timeout).
  int64_t Pick(const std::string& id) {
    sqlite3_bind_text(pick, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    int64_t generation = -1;
    if (sqlite3_step(pick) == SQLITE_ROW) generation = sqlite3_column_int64(pick, 0);
    sqlite3_reset(pick);
    return generation;
  }
  void Release(const std::string& id, int64_t generation) {
    sqlite3_bind_text(release, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(release, 2, generation);
    sqlite3_step(release);
    sqlite3_reset(release);
  }
};

// One claim -> hold -> release cycle of a wrong way, given the picked id.
void PlainCycle(const Options& o, PlainClient* c, const std::string& id, Holders* holders,
                Tally* tally) {
  const int64_t generation = c->Pick(id);
  if (generation < 0) {
    ++tally->errors;
    return;
  }
  holders->Take(id);
  Hold(o);
  holders->Drop(id);
  c->Release(id, generation);
  ++tally->cycles;
}

Result Naive(const Options& o, const std::string& path) {
  Holders holders;
  Tally tally;
  const double rate = RunClients(o, &tally, [&](int t, const std::atomic<bool>& stop) {
    PlainClient c(path);
    sqlite3_bind_text(c.select, 1, kRegion, -1, SQLITE_STATIC);
    sqlite3_bind_text(c.select, 2, kPool, -1, SQLITE_STATIC);
    sqlite3_bind_int(c.select, 3, o.candidates);
    std::mt19937_64 rng(t + 1);
    while (!stop.load(std::memory_order_relaxed)) {
      std::vector<std::string> ids = Ids(c.select);
      if (ids.empty()) {
        ++tally.no_capacity;
        continue;
      }
      PlainCycle(o, &c, ids[rng() % ids.size()], &holders, &tally);
    }
  });
  return Measured(rate, &holders, tally);
}

// Snapshot is the mirror the second wrong way trusts: the available ids as of
// the last refresh, cheapest first. Its refresh thread is the only writer; clients read it
// from any thread.
class Snapshot {
 public:
  Snapshot(const std::string& path, int refresh_ms) : path_(path), refresh_ms_(refresh_ms) {
    Refresh();  // a first copy before any client asks
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(refresh_ms_));
        Refresh();
      }
    });
  }
  ~Snapshot() {
    stop_ = true;
    thread_.join();
    if (db_) sqlite3_close(db_);
  }
  std::shared_ptr<const std::vector<std::string>> Get() {
    std::lock_guard<std::mutex> l(mu_);
    return ids_;
  }
  uint64_t refreshes() const { return refreshes_.load(); }

 private:
  void Refresh() {
    if (!db_) {
      if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        Die("open read-only " + path_);
      }
      sqlite3_busy_timeout(db_, 5000);
      select_ = Prepare(db_, kSelectAvailable);
      sqlite3_bind_text(select_, 1, kRegion, -1, SQLITE_STATIC);
      sqlite3_bind_text(select_, 2, kPool, -1, SQLITE_STATIC);
    }
    auto ids = std::make_shared<const std::vector<std::string>>(Ids(select_));
    std::lock_guard<std::mutex> l(mu_);
    ids_ = std::move(ids);
    ++refreshes_;
  }

  std::string path_;
  int refresh_ms_;
  sqlite3* db_ = nullptr;  // opened before the thread starts; then its own
  sqlite3_stmt* select_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refreshes_{0};
  std::mutex mu_;
  std::shared_ptr<const std::vector<std::string>> ids_;  // GUARDED_BY(mu_)
  std::thread thread_;
};

Result Mirror(const Options& o, const std::string& path, uint64_t* refreshes) {
  Holders holders;
  Tally tally;
  Snapshot snapshot(path, o.refresh_ms);
  const double rate = RunClients(o, &tally, [&](int t, const std::atomic<bool>& stop) {
    PlainClient c(path);
    std::mt19937_64 rng(1000 + t);
    while (!stop.load(std::memory_order_relaxed)) {
      auto ids = snapshot.Get();
      if (ids->empty()) {
        ++tally.no_capacity;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      size_t k = std::min<size_t>(ids->size(), o.candidates);
      PlainCycle(o, &c, (*ids)[rng() % k], &holders, &tally);
    }
  });
  *refreshes = snapshot.refreshes();
  return Measured(rate, &holders, tally);
}

// Ours also creates the file and registers the pool, which the wrong ways
// then use as it is left (every container available again).
Result Ours(const Options& o, const std::string& path) {
  store::ShardMap map(path, 1);
  std::vector<std::unique_ptr<store::Shard>> shards;
  if (auto s = store::OpenShards(map, store::DbOptions{}, {}, &shards); !s.ok()) {
    Die(s.ToString());
  }
  std::vector<store::Shard*> ptrs{shards[0].get()};
  store::ClaimPolicy policy;
  policy.candidates = o.candidates;
  policy.dead_after_ms = 24 * 3600 * 1000;  // no heartbeats here; keep every container healthy
  store::SqliteStorage storage(ptrs, map, policy);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < o.containers; ++i) {
    specs.push_back({"c" + std::to_string(i), kRegion, kPool, i % 50, "{}"});
  }
  auto registered = bench::Await<store::ContainerResult>([&](auto cb) { storage.Register(specs, cb); });
  if (registered.outcome != store::Outcome::kOk) Die("register: " + registered.message);
  Holders holders;
  Tally tally;
  double rate = 0;
  {
    allocator::Allocator alloc(&storage, {});
    rate = RunClients(o, &tally, [&](int, const std::atomic<bool>& stop) {
      while (!stop.load(std::memory_order_relaxed)) {
        store::ClaimRequest req;
        req.region = kRegion;
        req.pool = kPool;
        auto c = bench::Await<store::SessionResult>(
            [&](auto cb) { alloc.Claim(std::move(req), cb); });
        if (c.outcome == store::Outcome::kNoCapacity) {
          ++tally.no_capacity;
          continue;
        }
        if (c.outcome != store::Outcome::kOk) {
          ++tally.errors;
          continue;
        }
        holders.Take(c.session.container_id);
        Hold(o);
        holders.Drop(c.session.container_id);
        auto rel = bench::Await<store::SessionResult>([&](auto cb) {
          alloc.Release({}, c.session.session_id, c.session.token, cb);
        });
        // A stolen container would also show here, as a stale token.
        if (rel.outcome != store::Outcome::kOk) ++tally.errors;
        ++tally.cycles;
      }
    });
    // The writer's queued jobs point at the Allocator: stop it first.
    shards[0]->writer->Stop();
  }
  return Measured(rate, &holders, tally);
}

// Puts every container back to available: each way starts from the same pool.
void ResetPool(const std::string& path) {
  sqlite3* db = Open(path);
  char* err = nullptr;
  if (sqlite3_exec(db, kResetAll, nullptr, nullptr, &err) != SQLITE_OK) Die(err);
  sqlite3_close(db);
}

void Print(const char* way, const Result& r) {
  std::printf("%s_cycles_per_s %.0f 1/s\n", way, r.cycles_per_s);
  std::printf("%s_peak_live_sessions %lld count\n", way, (long long)r.peak_sessions);
  std::printf("%s_errors %llu count\n", way, (unsigned long long)r.errors);
  std::printf("%s_no_capacity %llu count\n", way, (unsigned long long)r.no_capacity);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"double allocations of the two wrong claims against ours, same load, same pool"};
  bench::AddStoreOptions(app, &o);
  app.add_option("--clients", o.clients, "client threads, each claim -> hold -> release")
      ->check(CLI::Range(1, 1024));
  app.add_option("--hold-us", o.hold_us, "how long a claimed container is held");
  app.add_option("--candidates", o.candidates, "K cheapest containers a claim picks from")
      ->check(CLI::Range(1, 1000));
  app.add_option("--refresh-ms", o.refresh_ms, "the mirror's refresh period")
      ->check(CLI::Range(1, 60000));
  CLI11_PARSE(app, argc, argv);
#ifdef NDEBUG
  const char* build = "release";
#else
  const char* build = "debug";
  std::printf("# WARNING: debug build; figures are not representative\n");
#endif
  std::printf(
      "# sqlite %s, sync full, build %s, cores %u, clients %d, containers %d, hold %d us, "
      "candidates %d, mirror refresh %d ms, %.1f s a way\n",
      sqlite3_libversion(), build, std::thread::hardware_concurrency(), o.clients, o.containers,
      o.hold_us, o.candidates, o.refresh_ms, o.seconds);
  const std::string path = o.dir + "/wrong_ways_" + std::to_string(::getpid()) + ".db";

  Result ours = Ours(o, path);
  ResetPool(path);
  Result naive = Naive(o, path);
  ResetPool(path);
  uint64_t refreshes = 0;
  Result mirror = Mirror(o, path, &refreshes);

  Print("ours", ours);
  std::printf("double_allocations %llu count\n", (unsigned long long)ours.doubles);
  Print("naive", naive);
  std::printf("naive_double_allocations %llu count\n", (unsigned long long)naive.doubles);
  Print("mirror", mirror);
  std::printf("mirror_refreshes %llu count\n", (unsigned long long)refreshes);
  std::printf("mirror_over_allocations %llu count\n", (unsigned long long)mirror.doubles);
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::remove((path + suffix).c_str());
  if (ours.doubles > 0) {
    std::fprintf(stderr, "wrong_ways: OUR CLAIM DOUBLE-ALLOCATED %llu times\n",
                 (unsigned long long)ours.doubles);
    return 1;
  }
  if (ours.cycles_per_s == 0) {
    std::fprintf(stderr, "wrong_ways: our claim made no cycle; nothing was checked\n");
    return 2;
  }
  return 0;
}
