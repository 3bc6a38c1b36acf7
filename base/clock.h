#ifndef EDGEALLOC_BASE_CLOCK_H_
#define EDGEALLOC_BASE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace base {

// Milliseconds since the Unix epoch, from the system clock: the time stamps
// that are stored (leases, heartbeats) and shown. Safe from any thread.
inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Milliseconds of the steady clock: spans and deadlines, which a step of
// the wall clock must neither lengthen nor shorten. Safe from any thread.
inline int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace base

#endif  // EDGEALLOC_BASE_CLOCK_H_
