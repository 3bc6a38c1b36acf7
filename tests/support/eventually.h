#ifndef EDGEALLOC_TESTS_SUPPORT_EVENTUALLY_H_
#define EDGEALLOC_TESTS_SUPPORT_EVENTUALLY_H_

// Bounded polling for a condition another thread makes true: the tests'
// way to wait without assuming how fast a loaded machine is.

#include <chrono>
#include <functional>
#include <thread>

namespace testing {

// True once pred() is, polled every 5 ms; false if it still is not after
// `timeout` (pred() is asked once more at the end).
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_EVENTUALLY_H_
