#ifndef EDGEALLOC_STORE_CLOCK_STEPS_H_
#define EDGEALLOC_STORE_CLOCK_STEPS_H_

#include <atomic>
#include <cstdint>

#include "base/mutex.h"

namespace store {

// A wall clock that jumps by less than this between two readings, against
// the monotonic clock, is taken as time passing (NTP's slewing, a reading
// delayed by the scheduler); a larger jump is a step. A step smaller than it
// can move a lease's end or a silence by that much.
inline constexpr int64_t kClockStepToleranceMs = 500;

// Tells steps of a wall clock (an operator's `date -s`, an NTP step, a VM
// resumed with a stale clock) from time passing, by reading it beside a
// monotonic clock: between two readings both should advance alike, and the
// difference is the step. Engine-neutral: the wall clock may be this node's
// or a database's (read through a round trip). Not thread-safe.
class ClockStepTracker {
 public:
  explicit ClockStepTracker(int64_t tolerance_ms = kClockStepToleranceMs)
      : tolerance_ms_(tolerance_ms) {}
  // One reading of both clocks, taken together. Returns the step since the
  // previous reading: 0 when within the tolerance (or for the first).
  int64_t Observe(int64_t wall_ms, int64_t monotonic_ms);

 private:
  const int64_t tolerance_ms_;
  bool started_ = false;
  int64_t wall_ms_ = 0;
  int64_t monotonic_ms_ = 0;
};

// This process's wall clock (base::NowMs), watched for steps against
// std::chrono::steady_clock: one for the process, as the wall clock is.
// Every reading of the wall clock that decides something (a lease's end, a
// silence) goes through Read, so that the step is known before the reading
// is used. Safe from any thread.
class WallClockSteps {
 public:
  struct Reading {
    int64_t wall_ms = 0;     // base::NowMs() as read
    int64_t stepped_ms = 0;  // every step found so far, summed, this reading's included
  };
  static WallClockSteps& Process();

  Reading Read();
  // Steps found since the process started.
  uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }

 private:
  WallClockSteps() = default;

  base::Mutex mu_;
  ClockStepTracker tracker_ GUARDED_BY(mu_);
  int64_t stepped_ms_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> steps_{0};
};

}  // namespace store

#endif  // EDGEALLOC_STORE_CLOCK_STEPS_H_
