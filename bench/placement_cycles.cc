// placement_cycles: durable claim+release cycles a second, and each claim's
// latency, for one placement on a database load_fleet wrote (bench/
// placement.sh says which pools and how many containers). Through the
// allocator and the shard's group-commit Writer, no HTTP, as store_cycles:
// C clients, each a chain of callbacks (claim -> release -> claim), in
// region `bench`, one pool, with the placement and, with --selector, the
// two-key selector {"arch":"x86","gpu":"yes"} (load_fleet's `gpu`
// attributes: half the pool matches). A claim's latency is from its call to
// its callback. Prints `name value unit`.

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "allocator/allocator.h"
#include "bench/bench_support.h"
#include "bench/cycle_chains.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace {

using bench::Clock;

struct Options {
  std::string db, pool = "default", placement = "fittest";
  bool selector = false;
  int clients = 64;
  double seconds = 5;
  double warmup = 1;
};

// Claim latencies in microseconds, from every client's callbacks.
class Latencies {
 public:
  void Add(int64_t us) {
    std::lock_guard<std::mutex> lock(mu_);
    if (on_) us_.push_back(us);
  }
  void Start() {
    std::lock_guard<std::mutex> lock(mu_);
    on_ = true;
  }
  // The q-th quantile in ms of what was added since Start (sorts them).
  double QuantileMs(double q) {
    std::lock_guard<std::mutex> lock(mu_);
    if (us_.empty()) return 0;
    std::sort(us_.begin(), us_.end());
    const size_t i = std::min(us_.size() - 1, static_cast<size_t>(q * us_.size()));
    return us_[i] / 1000.0;
  }

 private:
  std::mutex mu_;
  bool on_ = false;
  std::vector<int64_t> us_;
};

store::ClaimRequest Request(const Options& o, store::Placement placement) {
  store::ClaimRequest req;
  req.region = "bench";
  req.pool = o.pool;
  req.placement = placement;
  if (o.selector) req.selector = {{"arch", {"x86"}}, {"gpu", {"yes"}}};
  return req;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"claim+release cycles and claim latency for one placement (bench/placement.sh)"};
  app.add_option("--db", o.db, "a database load_fleet wrote")->required();
  app.add_option("--pool", o.pool, "the pool of region bench the clients claim in");
  app.add_option("--placement", o.placement)
      ->check(CLI::IsMember({"fittest", "packed", "distributed"}));
  app.add_flag("--selector", o.selector, "claim with the selector arch=x86, gpu=yes");
  app.add_option("--clients", o.clients)->check(CLI::Range(1, 4096));
  app.add_option("--seconds", o.seconds, "seconds measured");
  app.add_option("--warmup", o.warmup, "seconds run before measuring");
  CLI11_PARSE(app, argc, argv);
#ifndef NDEBUG
  std::printf("# WARNING: debug build; figures are not representative\n");
#endif
  store::Placement placement;
  store::ParsePlacement(o.placement, &placement);

  store::ShardMap map(o.db, 1);
  std::vector<std::unique_ptr<store::Shard>> shards;
  if (auto s = store::OpenShards(map, store::DbOptions{}, {}, &shards); !s.ok()) {
    std::fprintf(stderr, "placement_cycles: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<store::Shard*> ptrs{shards[0].get()};
  // load_fleet's rows carry the load's time as their heartbeat and nothing
  // beats during the run: liveness far longer than it (as bench/scale.sh).
  store::ClaimPolicy policy;
  policy.dead_after_ms = 3600000;
  store::SqliteStorage storage(ptrs, map, policy);
  allocator::AllocatorOptions ao;
  allocator::Allocator alloc(&storage, ao);

  Latencies latencies;
  bench::CycleChains chains(&alloc, [&] { return Request(o, placement); },
                            [&](bench::Clock::duration d) {
                              latencies.Add(
                                  std::chrono::duration_cast<std::chrono::microseconds>(d).count());
                            });
  chains.Start(o.clients);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.warmup * 1000)));
  latencies.Start();
  const auto t0 = Clock::now();
  const double cpu0 = bench::ProcessCpuSeconds();
  const uint64_t c0 = chains.cycles();
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.seconds * 1000)));
  const uint64_t n = chains.cycles() - c0;
  const double cpu = bench::ProcessCpuSeconds() - cpu0;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  chains.Stop();

  std::printf("# sqlite %s, cores %u, clients %d, pool %s, placement %s%s\n", sqlite3_libversion(),
              std::thread::hardware_concurrency(), o.clients, o.pool.c_str(),
              o.placement.c_str(), o.selector ? ", selector arch=x86 gpu=yes" : "");
  std::printf("claims_per_s %.0f 1/s\n", n / secs);
  std::printf("claim_p50_ms %.3f ms\n", latencies.QuantileMs(0.50));
  std::printf("claim_p99_ms %.3f ms\n", latencies.QuantileMs(0.99));
  std::printf("cpu_us_per_cycle %.1f us\n", n ? cpu * 1e6 / n : 0.0);
  std::printf("claims_without_a_free_slot %llu count\n",
              static_cast<unsigned long long>(chains.misses()));
  std::printf("double_allocations %llu count\n",
              static_cast<unsigned long long>(chains.bad_releases()));
  return chains.bad_releases() ? 1 : 0;
}
