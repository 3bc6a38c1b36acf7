#include "batcher/lane.h"

#include <algorithm>

#include "base/clock.h"

namespace batcher {
namespace {

// Where the run of items with items[i]'s accepted_ms and region ends: a
// request's items share one acceptance (and mostly one region), so a batch
// has few runs and the lane's maps are touched a few times, not once an item.
size_t AcceptedRunEnd(const Heartbeat* items, size_t n, size_t i) {
  size_t j = i + 1;
  while (j < n && items[j].accepted_ms == items[i].accepted_ms &&
         items[j].region_index == items[i].region_index) {
    ++j;
  }
  return j;
}

// Takes `n` items accepted at `accepted_ms` out of *counts.
void Uncount(std::map<int64_t, int64_t>* counts, int64_t accepted_ms, int64_t n) {
  auto it = counts->find(accepted_ms);
  if (it == counts->end()) return;
  it->second -= n;
  if (it->second <= 0) counts->erase(it);
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
    const auto count = static_cast<int64_t>(end - i);
    queued_by_accepted_ms_[items[i].accepted_ms] += count;
    queued_by_region_[items[i].region_index][items[i].accepted_ms] += count;
  }
}

void Lane::MarkWritten(const Heartbeat* items, size_t n) {
  base::MutexLock lock(&queued_mu_);
  for (size_t i = 0, end; i < n; i = end) {
    end = AcceptedRunEnd(items, n, i);
    Uncount(&queued_by_accepted_ms_, items[i].accepted_ms, static_cast<int64_t>(end - i));
    Uncount(&queued_by_region_[items[i].region_index], items[i].accepted_ms,
            static_cast<int64_t>(end - i));
  }
}

int64_t Lane::Watermark() const {
  base::MutexLock lock(&queued_mu_);
  const int64_t now = base::NowMs();
  if (queued_by_accepted_ms_.empty()) return now;
  // Items accepted at this ms are not all stored yet; those before it are.
  return std::min(now, queued_by_accepted_ms_.begin()->first - 1);
}

int64_t Lane::OldestOf(int region_index) const {
  base::MutexLock lock(&queued_mu_);
  int64_t oldest = 0;
  for (int index : {region_index, kUnknownRegion}) {
    const auto it = queued_by_region_.find(index);
    if (it == queued_by_region_.end() || it->second.empty()) continue;
    const int64_t first = it->second.begin()->first;
    if (oldest == 0 || first < oldest) oldest = first;
  }
  return oldest;
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
