#include "batcher/lane.h"

#include <algorithm>

#include "base/clock.h"

namespace batcher {
namespace {

// Where the run of items with items[i]'s accepted_ms ends: a request's items
// share one, so a batch has few runs and the lane's map is touched a few
// times, not once an item.
size_t AcceptedRunEnd(const Heartbeat* items, size_t n, size_t i) {
  size_t j = i + 1;
  while (j < n && items[j].accepted_ms == items[i].accepted_ms) ++j;
  return j;
}

}  // namespace

bool Lane::Reserve(int64_t n, int64_t capacity) {
  int64_t current = depth_.load(std::memory_order_relaxed);
  do {
    if (current + n > capacity) return false;
  } while (!depth_.compare_exchange_weak(current, current + n, std::memory_order_acq_rel));
  return true;
}

void Lane::MarkQueued(Heartbeat* items, size_t n) {
  base::MutexLock lock(&queued_mu_);
  // Taken under the lock Watermark reads under: an item is either in the
  // set when the reaper looks, or stamped after it looked.
  const int64_t now = base::NowMs();
  for (size_t i = 0; i < n; ++i) items[i].accepted_ms = std::max(items[i].accepted_ms, now);
  for (size_t i = 0, end; i < n; i = end) {
    end = AcceptedRunEnd(items, n, i);
    queued_by_accepted_ms_[items[i].accepted_ms] += static_cast<int64_t>(end - i);
  }
}

void Lane::MarkWritten(const Heartbeat* items, size_t n) {
  base::MutexLock lock(&queued_mu_);
  for (size_t i = 0, end; i < n; i = end) {
    end = AcceptedRunEnd(items, n, i);
    auto it = queued_by_accepted_ms_.find(items[i].accepted_ms);
    if (it == queued_by_accepted_ms_.end()) continue;
    it->second -= static_cast<int64_t>(end - i);
    if (it->second <= 0) queued_by_accepted_ms_.erase(it);
  }
}

int64_t Lane::Watermark() const {
  base::MutexLock lock(&queued_mu_);
  const int64_t now = base::NowMs();
  if (queued_by_accepted_ms_.empty()) return now;
  // Items accepted at this ms are not all stored yet; those before it are.
  return std::min(now, queued_by_accepted_ms_.begin()->first - 1);
}

void Lane::NoteWriteFailed(int64_t now_ms) {
  last_failed_ms_.store(now_ms);
  if (failing_since_ms_.load() == 0) failing_since_ms_.store(now_ms);
}

void Lane::NoteWriteSucceeded() {
  if (failing_since_ms_.load() != 0) {
    // Heard again from now: the failing time was the server's deafness.
    last_failed_ms_.store(base::SteadyNowMs());
    failing_since_ms_.store(0);
  }
}

int64_t Lane::HearingHoldMs() const {
  return failing_since_ms_.load() != 0 ? base::SteadyNowMs() : last_failed_ms_.load();
}

}  // namespace batcher
