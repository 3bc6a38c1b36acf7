#include "store/postgres/deferred_heartbeats.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace store {
namespace {

// Adds `row` to `deferred`, folded into its container's last deferred row
// when neither carries a state and both carry a ts_ms or both do not (as
// batcher/coalesce.h folds a batch), so that a container that keeps
// reporting while its row stays locked keeps one row, not one a report.
// `since`: the oldest acceptance the row stands for, kept beside it in
// *deferred_since (a fold keeps the older).
void Defer(const HeartbeatRow& row, int64_t since, std::vector<HeartbeatRow>* deferred,
           std::vector<int64_t>* deferred_since) {
  for (auto it = deferred->rbegin(); it != deferred->rend(); ++it) {
    if (it->container_id != row.container_id) continue;
    if (it->state != ReportedState::kNone || row.state != ReportedState::kNone ||
        it->ts_ms.has_value() != row.ts_ms.has_value()) {
      break;
    }
    const bool newer = !row.ts_ms || *row.ts_ms >= *it->ts_ms;
    if (newer) {
      it->ts_ms = row.ts_ms;
      if (row.load) it->load = row.load;
    }
    it->accepted_ms = std::max(it->accepted_ms, row.accepted_ms);
    int64_t& oldest = (*deferred_since)[static_cast<size_t>(deferred->rend() - it - 1)];
    oldest = std::min(oldest, since);
    return;
  }
  deferred->push_back(row);
  deferred_since->push_back(since);
}

}  // namespace

bool DeferredHeartbeats::Begin(bool wait, std::vector<HeartbeatRow>* taken) {
  base::MutexLock lock(&mu_);
  while (writing_) {
    if (!wait) return false;
    idle_.Wait(&mu_);
  }
  writing_ = true;
  *taken = std::exchange(deferred_, {});
  taken_since_ = std::exchange(deferred_since_, {});
  return true;
}

void DeferredHeartbeats::End(const std::vector<HeartbeatRow>& batch, size_t taken,
                             const Status& s, const HeartbeatWriteResult& result,
                             const std::function<void(uint64_t, int64_t)>& count) {
  base::MutexLock lock(&mu_);
  if (!s.ok()) {
    // Nothing was written: the rows taken back wait for the next try (the
    // caller's own are its to retry).
    deferred_.assign(batch.begin(), batch.begin() + static_cast<ptrdiff_t>(taken));
    deferred_since_ = std::move(taken_since_);
  } else {
    for (size_t i : result.skipped) {
      const int64_t since = i < taken ? taken_since_[i] : batch[i].accepted_ms;
      Defer(batch[i], since, &deferred_, &deferred_since_);
    }
  }
  taken_since_.clear();
  count(s.ok() ? result.skipped.size() : 0, static_cast<int64_t>(deferred_.size()));
  writing_ = false;
  idle_.SignalAll();
}

int64_t DeferredHeartbeats::OldestHeldBackMs() {
  base::MutexLock lock(&mu_);
  // A row moves from deferred to taken, and out of taken once stored, under
  // this lock: it is seen in one of them until then.
  int64_t oldest = 0;
  for (const std::vector<int64_t>* since : {&deferred_since_, &taken_since_}) {
    for (int64_t ms : *since) oldest = oldest == 0 ? ms : std::min(oldest, ms);
  }
  return oldest;
}

}  // namespace store
