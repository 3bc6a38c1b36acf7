#ifndef EDGEALLOC_BASE_STOP_SIGNAL_H_
#define EDGEALLOC_BASE_STOP_SIGNAL_H_

#include <chrono>

#include "base/mutex.h"

namespace base {

// The stop of a thread that works in rounds (a reaper, a watch, a
// publisher): between rounds it waits on WaitFor, and Stop ends the wait at
// once, so a long period never delays a shutdown. Once stopped, stopped for
// good. Safe from any thread.
class StopSignal {
 public:
  void Stop();
  bool stopped() const;
  // Waits `period` (on the steady clock, whatever wakes the wait early)
  // unless stopped first; whether it is stopped.
  bool WaitFor(std::chrono::milliseconds period);

 private:
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
};

}  // namespace base

#endif  // EDGEALLOC_BASE_STOP_SIGNAL_H_
