#ifndef EDGEALLOC_BASE_LOG_GATE_H_
#define EDGEALLOC_BASE_LOG_GATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "base/clock.h"

namespace base {

// Lets one log line a period through and counts the ones it holds back: for
// a warning that clients can cause once a request (a refusal), which would
// otherwise write gigabytes an hour. The line let through says how many were
// held back since the last. Safe from any thread.
class LogGate {
 public:
  explicit LogGate(std::chrono::milliseconds period) : period_ms_(period.count()) {}
  LogGate(const LogGate&) = delete;
  LogGate& operator=(const LogGate&) = delete;

  // True if a line is due at `now_ms` (a steady clock's ms): none was let
  // through in the last period. Then *held is the lines held back since the
  // last one let through (0 for the first); else the line is counted.
  bool Due(int64_t now_ms, uint64_t* held) {
    int64_t last = last_ms_.load();
    const bool quiet = last < 0 || now_ms - last >= period_ms_;
    if (quiet && last_ms_.compare_exchange_strong(last, now_ms)) {
      *held = held_.exchange(0);
      return true;
    }
    held_.fetch_add(1);
    return false;
  }
  // Due, now.
  bool Due(uint64_t* held) {
    return Due(SteadyNowMs(), held);
  }

 private:
  const int64_t period_ms_;
  std::atomic<int64_t> last_ms_{-1};
  std::atomic<uint64_t> held_{0};
};

}  // namespace base

#endif  // EDGEALLOC_BASE_LOG_GATE_H_
