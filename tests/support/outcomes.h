#ifndef EDGEALLOC_TESTS_SUPPORT_OUTCOMES_H_
#define EDGEALLOC_TESTS_SUPPORT_OUTCOMES_H_

#include <functional>
#include <future>
#include <mutex>
#include <vector>

#include "store/status.h"

namespace testing {

// Collects the Done statuses of many write jobs; Wait blocks until all came.
struct Outcomes {
  explicit Outcomes(size_t n) : statuses(n) {}
  std::function<void(store::Status)> For(size_t i) {
    return [this, i](store::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      statuses[i] = std::move(s);
      if (++count == statuses.size()) all.set_value();
    };
  }
  // Takes mu once after the last status came: the callback that set `all`
  // still holds it, and this object (on the test's stack) must outlive that
  // callback's unlock (ThreadSanitizer saw the next test reuse the frame).
  void Wait() {
    all.get_future().wait();
    std::lock_guard<std::mutex> lock(mu);
  }
  std::mutex mu;
  std::vector<store::Status> statuses;
  size_t count = 0;
  std::promise<void> all;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_OUTCOMES_H_
