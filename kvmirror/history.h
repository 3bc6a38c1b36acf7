#ifndef EDGEALLOC_KVMIRROR_HISTORY_H_
#define EDGEALLOC_KVMIRROR_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/mutex.h"
#include "base/shared_slot.h"
#include "kvmirror/snapshot.h"

namespace kvmirror {

// One sample of every pool this often, by default (--history-interval-ms).
inline constexpr int64_t kDefaultHistoryIntervalMs = 10 * 1000;
// Samples kept: ten minutes at the default interval, enough to tell a pool
// filling up from one that was always full.
inline constexpr int kHistorySamples = 60;
// Pools kept at most, as edgealloc_pool_claims_total counts at most (4096):
// made-up pool names cannot grow the history without bound. A pool past it
// is left out of every sample (the body says how many were).
inline constexpr size_t kMaxHistoryPools = 4096;

// A CapacityHistory is the short utilisation history of every pool: the
// available and picked counts and the slots (total, used, free) of the
// snapshots the Mirror publishes, sampled
// at most once an interval (the first snapshot of each interval-long slot of
// the clock), the last kHistorySamples of them. Add() may be called from any
// thread (it takes a lock of its own; the Mirror calls it from its publisher);
// Json() is safe from any thread and never waits for Add(): it loads the body
// rendered when the latest sample was taken.
class CapacityHistory {
 public:
  // REQUIRES: interval_ms > 0, max_samples > 0.
  explicit CapacityHistory(int64_t interval_ms, int max_samples = kHistorySamples,
                           size_t max_pools = kMaxHistoryPools);
  CapacityHistory(const CapacityHistory&) = delete;
  CapacityHistory& operator=(const CapacityHistory&) = delete;

  // Takes a sample of `snap` if it is the first of its slot
  // (snap.as_of_ms() / interval_ms above the last sample's) and returns true;
  // returns false, changing nothing, for a snapshot of a slot already sampled
  // or an older one, and for the empty snapshot (as_of_ms() == 0).
  bool Add(const Snapshot& snap);

  // The body of GET /v1/capacity/history, on one line: the sample times,
  // oldest first, and for every pool seen in any kept sample its counts at
  // those times, null where the pool was not in that sample:
  //   {"interval_ms":10000,"pools_omitted":0,"as_of_ms":[t0,t1],
  //    "regions":{"weur":{"pools":{"chrome":{"available":[3,2],"picked":[5,6],
  //      "slots":[24,24],"slots_used":[9,11],"slots_free":[12,10]}}}}}
  // Names are escaped as in Snapshot::ToCapacityJson. Never null.
  std::shared_ptr<const std::string> Json() const { return json_.Load(); }

  int64_t interval_ms() const { return interval_ms_; }

  // The series a pool has in the body: available, picked, slots,
  // slots_used, slots_free.
  static constexpr size_t kSeriesFields = 5;

 private:
  // Counts of one pool, one series a field in the body's order, one entry a
  // kept sample; -1 where the pool was absent.
  struct Series {
    std::deque<int64_t> values[kSeriesFields];
  };
  using Pools = std::map<std::string, Series, std::less<>>;

  void Render() REQUIRES(mu_);

  const int64_t interval_ms_;
  const size_t max_samples_;
  const size_t max_pools_;

  base::Mutex mu_;
  int64_t last_slot_ GUARDED_BY(mu_) = -1;
  std::deque<int64_t> times_ GUARDED_BY(mu_);
  std::map<std::string, Pools, std::less<>> regions_ GUARDED_BY(mu_);
  size_t pools_ GUARDED_BY(mu_) = 0;
  // Pools of the latest sample that max_pools_ left out.
  size_t omitted_ GUARDED_BY(mu_) = 0;

  base::SharedSlot<const std::string> json_;
};

}  // namespace kvmirror

#endif  // EDGEALLOC_KVMIRROR_HISTORY_H_
