#include "base/stop_signal.h"

namespace base {

void StopSignal::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
}

bool StopSignal::stopped() const {
  MutexLock lock(&mu_);
  return stop_;
}

bool StopSignal::WaitFor(std::chrono::milliseconds period) {
  const auto until = std::chrono::steady_clock::now() + period;
  MutexLock lock(&mu_);
  while (!stop_ && std::chrono::steady_clock::now() < until) {
    cv_.WaitFor(&mu_, until - std::chrono::steady_clock::now());
  }
  return stop_;
}

}  // namespace base
