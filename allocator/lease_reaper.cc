#include "allocator/lease_reaper.h"

#include <algorithm>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace allocator {

LeaseReaper::LeaseReaper(store::Storage* storage, const AllocatorOptions* options,
                         AllocatorStats* stats, std::function<void()> ended)
    : storage_(storage), options_(options), stats_(stats), ended_(std::move(ended)) {}

void LeaseReaper::Start() {
  if (!thread_.joinable()) {
    thread_ = std::jthread([this](std::stop_token stop) { Loop(std::move(stop)); });
  }
}

void LeaseReaper::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

int64_t LeaseReaper::ReapExpiredLeases() {
  int64_t ended_total = 0;
  for (int p = 0; p < storage_->partitions(); ++p) {
    // A backlog is ended in several short transactions, not one long one.
    for (int sweep = 0; sweep < options_->max_sweeps_per_reap; ++sweep) {
      int64_t ended = 0;
      if (!storage_->SweepExpiredLeases(p, options_->reaper_batch_rows, &ended).ok()) break;
      ended_total += ended;
      stats_->lease_expiries.fetch_add(static_cast<uint64_t>(ended), std::memory_order_relaxed);
      if (ended < options_->reaper_batch_rows) break;
    }
  }
  if (ended_total > 0) ended_();
  return ended_total;
}

int64_t LeaseReaper::PruneRowsPerPass() const {
  // Rounded up, and at least one row: a rate too low for one period still
  // prunes.
  const int64_t rate = std::max<int64_t>(1, options_->history_prune_rows_per_s);
  const int64_t period_ms = std::max(1, options_->history_prune_interval_ms);
  return std::max<int64_t>(1, (rate * period_ms + 999) / 1000);
}

LeaseReaper::Pruned LeaseReaper::PruneInPasses(
    const std::function<store::Status(int partition, int rows, int64_t* pruned)>& prune) {
  const int64_t budget = PruneRowsPerPass();
  const int batch = std::max(1, options_->history_prune_rows);
  Pruned total;
  for (int p = 0; p < storage_->partitions(); ++p) {
    // A backlog goes in several short transactions, never more than the
    // budget: the claims' writer keeps its turn between them.
    for (int64_t left = budget; left > 0;) {
      const int rows = static_cast<int>(std::min<int64_t>(batch, left));
      int64_t pruned = 0;
      if (!prune(p, rows, &pruned).ok()) {
        ++total.failures;
        break;  // the next partition still gets its turn
      }
      total.rows += pruned;
      left -= pruned;
      if (pruned < rows) break;
    }
  }
  return total;
}

int64_t LeaseReaper::PruneSessionHistory() {
  const Pruned pruned = PruneInPasses([this](int p, int rows, int64_t* out) {
    return storage_->PruneSessionHistory(p, options_->session_history_ms,
                                         options_->session_history_max_rows, rows, out);
  });
  stats_->history_prunes_failed.fetch_add(static_cast<uint64_t>(pruned.failures),
                                          std::memory_order_relaxed);
  stats_->history_pruned.fetch_add(static_cast<uint64_t>(pruned.rows), std::memory_order_relaxed);
  return pruned.rows;
}

int64_t LeaseReaper::PruneEvents() {
  return PruneInPasses([this](int p, int rows, int64_t* out) {
           return storage_->PruneEvents(p, options_->event_retention_ms, rows, out);
         }).rows;
}

void LeaseReaper::Loop(std::stop_token stop) {
  // The mutex only serves the wait, which a stop request ends at once.
  std::mutex mu;
  std::condition_variable_any cv;
  const auto interval = std::chrono::milliseconds(options_->reaper_interval_ms);
  const auto prune_interval = std::chrono::milliseconds(options_->history_prune_interval_ms);
  auto next_prune = std::chrono::steady_clock::now() + prune_interval;
  for (;;) {
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, stop, interval, [] { return false; });
    }
    if (stop.stop_requested()) return;
    const auto woke = std::chrono::steady_clock::now();
    ReapExpiredLeases();
    // Counted from the wake, not the prune's end: with the default periods
    // the history is pruned every time the reaper wakes.
    if (woke >= next_prune) {
      PruneSessionHistory();
      PruneEvents();
      next_prune = woke + prune_interval;
    }
  }
}

}  // namespace allocator
