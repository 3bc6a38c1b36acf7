#include "server/api/reader_pool.h"

#include <algorithm>

namespace server {

ReaderPool::ReaderPool(int threads, size_t queue_capacity)
    : capacity_(queue_capacity), per_owner_threads_(std::max(1, threads / 2)) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ReaderPool::~ReaderPool() { Stop(); }

ReaderPool::Posted ReaderPool::TryPost(Job job, std::string owner) {
  {
    base::MutexLock lock(&mu_);
    if (stopping_) return Posted::kStopping;
    if (queue_.size() >= capacity_) return Posted::kFull;
    queue_.push_back({std::move(job), std::move(owner)});
  }
  cv_.Signal();
  return Posted::kQueued;
}

void ReaderPool::Stop() {
  std::deque<Queued> dropped;
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.SignalAll();
  // Answered without reading, outside the lock.
  for (Queued& q : dropped) q.job(false);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t ReaderPool::queued() const {
  base::MutexLock lock(&mu_);
  return queue_.size();
}

std::deque<ReaderPool::Queued>::iterator ReaderPool::NextRunnableLocked() {
  // A loop, not find_if: the thread-safety analysis cannot see that a
  // lambda runs under mu_.
  for (auto q = queue_.begin(); q != queue_.end(); ++q) {
    if (q->owner.empty()) return q;
    auto it = running_.find(q->owner);
    if (it == running_.end() || it->second < per_owner_threads_) return q;
  }
  return queue_.end();
}

void ReaderPool::Loop() {
  for (;;) {
    Queued next;
    {
      base::MutexLock lock(&mu_);
      auto it = NextRunnableLocked();
      while (it == queue_.end() && !stopping_) {
        cv_.Wait(&mu_);
        it = NextRunnableLocked();
      }
      if (it == queue_.end()) return;  // stopping, and nothing left to run
      next = std::move(*it);
      queue_.erase(it);
      if (!next.owner.empty()) ++running_[next.owner];
    }
    next.job(true);
    if (next.owner.empty()) continue;
    {
      base::MutexLock lock(&mu_);
      auto it = running_.find(next.owner);
      if (--it->second == 0) running_.erase(it);
    }
    // A job of this owner may have waited for its share.
    cv_.SignalAll();
  }
}

Response ReaderRefusedResponse(ReaderPool::Posted why) {
  if (why == ReaderPool::Posted::kStopping) {
    return RefusalResponse(kServerStopping);
  }
  return RefusalResponse(kReadersBusy);
}

}  // namespace server
