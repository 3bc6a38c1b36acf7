#include "server/api/reader_pool.h"

#include <algorithm>
#include <string>

#include "base/log_gate.h"

namespace server {

ReaderPool::ReaderPool(int threads, size_t queue_capacity)
    : capacity_(queue_capacity),
      per_owner_threads_(std::max(1, threads / 2)),
      per_owner_queued_(std::max<size_t>(1, queue_capacity / kReaderQueueOwnerShareDivisor)) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ReaderPool::~ReaderPool() { Stop(); }

ReaderPool::Posted ReaderPool::TryPost(Job job, std::string owner) {
  {
    base::MutexLock lock(&mu_);
    if (stopping_) return Posted::kStopping;
    if (queue_.size() >= capacity_) {
      refusals_.full.fetch_add(1, std::memory_order_relaxed);
      return Posted::kFull;
    }
    if (!owner.empty()) {
      size_t& waiting = waiting_[owner];
      if (waiting >= per_owner_queued_) {
        refusals_.owner_share.fetch_add(1, std::memory_order_relaxed);
        return Posted::kOwnerShareFull;
      }
      ++waiting;
    }
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
    waiting_.clear();
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
      if (!next.owner.empty()) {
        ++running_[next.owner];
        auto waiting = waiting_.find(next.owner);
        if (--waiting->second == 0) waiting_.erase(waiting);
      }
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

Response ReaderRefusedResponse(ReaderPool::Posted why, std::string_view owner) {
  if (why == ReaderPool::Posted::kStopping) {
    return RefusalResponse(kServerStopping);
  }
  if (why == ReaderPool::Posted::kOwnerShareFull) {
    // A tenant looping reads would log one a request: one line a period.
    static base::LogGate gate(kRefusalLogPeriod);
    if (uint64_t held = 0; gate.Due(&held)) {
      LogWarn("edgealloc: a read of " + std::string(owner) +
              " refused 503 overloaded: its share of the reader queue is full" +
              (held == 0 ? std::string()
                         : " (and " + std::to_string(held) + " more since the last such line)"));
    }
    return RefusalResponse(kReaderShareFull);
  }
  return RefusalResponse(kReadersBusy);
}

}  // namespace server
