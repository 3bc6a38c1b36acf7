#include "store/clock_steps.h"

#include <chrono>

#include "base/clock.h"

namespace store {
namespace {


// A pair read further apart than this (the thread was descheduled, or the
// process stopped, between the two reads) is read again: its difference
// would be mistaken for a step.
constexpr int64_t kMaxPairGapMs = 20;
constexpr int kPairAttempts = 4;

}  // namespace

int64_t ClockStepTracker::Observe(int64_t wall_ms, int64_t monotonic_ms) {
  int64_t step = 0;
  if (started_) {
    const int64_t drift = (wall_ms - wall_ms_) - (monotonic_ms - monotonic_ms_);
    if (drift > tolerance_ms_ || drift < -tolerance_ms_) step = drift;
  }
  started_ = true;
  wall_ms_ = wall_ms;
  monotonic_ms_ = monotonic_ms;
  return step;
}

WallClockSteps& WallClockSteps::Process() {
  static WallClockSteps* const process = new WallClockSteps();
  return *process;
}

WallClockSteps::Reading WallClockSteps::Read() {
  base::MutexLock lock(&mu_);
  // Read under the lock, so that readings reach the tracker in the order
  // they were taken.
  int64_t wall = 0;
  int64_t monotonic = 0;
  for (int attempt = 0; attempt < kPairAttempts; ++attempt) {
    const int64_t before = base::SteadyNowMs();
    wall = base::NowMs();
    monotonic = base::SteadyNowMs();
    if (monotonic - before <= kMaxPairGapMs) break;
  }
  const int64_t step = tracker_.Observe(wall, monotonic);
  if (step != 0) {
    stepped_ms_ += step;
    steps_.fetch_add(1, std::memory_order_relaxed);
  }
  return Reading{wall, stepped_ms_};
}

}  // namespace store
