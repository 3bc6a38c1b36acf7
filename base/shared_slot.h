#ifndef EDGEALLOC_BASE_SHARED_SLOT_H_
#define EDGEALLOC_BASE_SHARED_SLOT_H_

#include <memory>
#include <utility>

#include "base/mutex.h"

namespace base {

// A shared_ptr that one thread replaces while others read it: Load() copies
// it, Store() swaps a new one in, each holding a mutex only for a pointer
// copy (the old value is freed after the mutex is let go). It stands in for
// std::atomic<std::shared_ptr<T>>: libstdc++ 12's load() drops its internal
// lock with memory_order_relaxed, so its read of the pointer is not ordered
// before the next store's write, a data race by the memory model that
// ThreadSanitizer reports (seen in CI on the mirror's snapshot).
template <typename T>
class SharedSlot {
 public:
  explicit SharedSlot(std::shared_ptr<T> initial = nullptr) : ptr_(std::move(initial)) {}
  SharedSlot(const SharedSlot&) = delete;
  SharedSlot& operator=(const SharedSlot&) = delete;

  std::shared_ptr<T> Load() const {
    MutexLock lock(&mu_);
    return ptr_;
  }
  void Store(std::shared_ptr<T> next) {
    {
      MutexLock lock(&mu_);
      ptr_.swap(next);
    }
    // `next` now holds the old value, released here, outside the mutex.
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<T> ptr_ GUARDED_BY(mu_);
};

}  // namespace base

#endif  // EDGEALLOC_BASE_SHARED_SLOT_H_
