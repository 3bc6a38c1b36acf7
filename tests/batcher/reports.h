#ifndef EDGEALLOC_TESTS_BATCHER_REPORTS_H_
#define EDGEALLOC_TESTS_BATCHER_REPORTS_H_

// What the batcher tests that drive a fleet through a real store share: one
// `ready` report of a container, a container's status as stored, and the
// watch of a lane that writes slower than dead-after.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "base/clock.h"
#include "batcher/batcher.h"
#include "store/storage.h"

namespace testing {

inline std::string StatusOf(store::Storage* s, const std::string& id) {
  return s->GetContainer(id).container.status;
}

inline std::vector<batcher::Heartbeat> Beat(const std::string& id) {
  batcher::Heartbeat h;
  h.container_id = id;
  h.state = batcher::Heartbeat::State::kReady;
  std::vector<batcher::Heartbeat> v;
  v.push_back(std::move(h));
  return v;
}

// What ReportWhileLagging saw.
struct LagWatch {
  bool reporter_dead = false;  // `reporter`, reported throughout, made dead
  bool silent_dead = false;    // `silent`, never reported, made dead
  int64_t max_lag_ms = 0;      // the most b.LagMs(0) said
};

// Reports `reporter` through `b` every 20 ms, its lane being slow, for at
// least 3 s and until `silent` is dead (at most 15 s on a loaded machine),
// reading both containers' status from `storage` as it goes.
inline LagWatch ReportWhileLagging(batcher::Batcher& b, store::Storage* storage,
                                   const std::string& reporter, const std::string& silent) {
  LagWatch w;
  const int64_t from = base::NowMs();
  while (base::NowMs() - from < 15000 && !(w.silent_dead && base::NowMs() - from >= 3000)) {
    REQUIRE(b.Submit(Beat(reporter)).accepted());
    w.max_lag_ms = std::max(w.max_lag_ms, b.LagMs(0));
    w.reporter_dead = w.reporter_dead || StatusOf(storage, reporter) == "dead";
    w.silent_dead = w.silent_dead || StatusOf(storage, silent) == "dead";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return w;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_BATCHER_REPORTS_H_
