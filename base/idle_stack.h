#ifndef EDGEALLOC_BASE_IDLE_STACK_H_
#define EDGEALLOC_BASE_IDLE_STACK_H_

#include <memory>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace base {

// The idle objects of a pool (database connections) that threads borrow one
// at a time: Take() the one put back last, or nullptr when none is idle (the
// caller makes a new one); Put() one back. Safe from any thread; the mutex
// is held only to move a pointer.
template <typename T>
class IdleStack {
 public:
  std::unique_ptr<T> Take() {
    MutexLock lock(&mu_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<T> taken = std::move(idle_.back());
    idle_.pop_back();
    return taken;
  }
  void Put(std::unique_ptr<T> object) {
    MutexLock lock(&mu_);
    idle_.push_back(std::move(object));
  }

 private:
  Mutex mu_;
  std::vector<std::unique_ptr<T>> idle_ GUARDED_BY(mu_);
};

}  // namespace base

#endif  // EDGEALLOC_BASE_IDLE_STACK_H_
