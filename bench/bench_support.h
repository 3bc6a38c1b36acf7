#ifndef EDGEALLOC_BENCH_BENCH_SUPPORT_H_
#define EDGEALLOC_BENCH_BENCH_SUPPORT_H_

// What the C++ benches without HTTP (store_cycles.cc, wrong_ways.cc,
// heartbeat_rows.cc) share: the options each takes, the process's CPU time,
// and waiting in line for a result that comes through a callback (the tests'
// own helper, tests/support/await.h, so that the two cannot drift apart).

#include <sys/resource.h>

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>

#include "tests/support/await.h"

namespace bench {

using Clock = std::chrono::steady_clock;
using testing::Await;

// Where the database file goes, how many containers it holds and how long
// each run is measured; a bench's Options derive from it.
struct StoreOptions {
  std::string dir = "/tmp";
  int containers = 1000;
  double seconds = 3;
};

// Adds --dir, --containers (at least min_containers) and --seconds to app.
inline void AddStoreOptions(CLI::App& app, StoreOptions* o, int min_containers = 1) {
  app.add_option("--dir", o->dir, "folder for the database files");
  app.add_option("--containers", o->containers)->check(CLI::Range(min_containers, 100000000));
  app.add_option("--seconds", o->seconds, "seconds each run is measured");
}

// User and system CPU time of this process so far.
inline double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace bench

#endif  // EDGEALLOC_BENCH_BENCH_SUPPORT_H_
