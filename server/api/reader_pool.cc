#include "server/api/reader_pool.h"

namespace server {

ReaderPool::ReaderPool(int threads, size_t queue_capacity) : capacity_(queue_capacity) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ReaderPool::~ReaderPool() { Stop(); }

ReaderPool::Posted ReaderPool::TryPost(Job job) {
  {
    base::MutexLock lock(&mu_);
    if (stopping_) return Posted::kStopping;
    if (queue_.size() >= capacity_) return Posted::kFull;
    queue_.push_back(std::move(job));
  }
  cv_.Signal();
  return Posted::kQueued;
}

void ReaderPool::Stop() {
  std::deque<Job> dropped;
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.SignalAll();
  // Answered without reading, outside the lock.
  for (Job& job : dropped) job(false);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t ReaderPool::queued() const {
  base::MutexLock lock(&mu_);
  return queue_.size();
}

void ReaderPool::Loop() {
  for (;;) {
    Job job;
    {
      base::MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and nothing left to run
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job(true);
  }
}

Response ReaderRefusedResponse(ReaderPool::Posted why) {
  if (why == ReaderPool::Posted::kStopping) {
    return RefusalResponse(kServerStopping);
  }
  return RefusalResponse(kReadersBusy);
}

}  // namespace server
