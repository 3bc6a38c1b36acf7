#ifndef EDGEALLOC_STORE_POSTGRES_DEFERRED_HEARTBEATS_H_
#define EDGEALLOC_STORE_POSTGRES_DEFERRED_HEARTBEATS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/mutex.h"
#include "store/status.h"
#include "store/types.h"

namespace store {

// One PostgreSQL partition's heartbeat rows skipped for a row lock another
// transaction held (HeartbeatWriteResult::skipped), kept until a write of
// the partition takes them, and the partition's writes one at a time, so
// that a container's rows are written in order (PostgresStorage's
// WriteHeartbeats and FlushDeferredHeartbeats, postgres_storage_heartbeats.cc).
// Safe from any thread.
class DeferredHeartbeats {
 public:
  DeferredHeartbeats() = default;
  DeferredHeartbeats(const DeferredHeartbeats&) = delete;
  DeferredHeartbeats& operator=(const DeferredHeartbeats&) = delete;

  // Becomes the partition's one write (waiting for one under way, if
  // `wait`; else false) and takes the deferred rows into *taken.
  bool Begin(bool wait, std::vector<HeartbeatRow>* taken);
  // Ends it: `batch`'s first `taken` rows were the deferred ones; they are
  // kept again if `s` failed, and the rows `result` skipped are kept.
  // count(rows skipped now, rows deferred) runs before the next write may
  // begin (the writer's gauges).
  void End(const std::vector<HeartbeatRow>& batch, size_t taken, const Status& s,
           const HeartbeatWriteResult& result,
           const std::function<void(uint64_t skipped, int64_t deferred)>& count);
  // The oldest acceptance among the rows held back, deferred or taken by
  // the write under way; 0 if none. Until stored they hold the reaper's
  // watermark (Storage::OldestHeldBackMs).
  int64_t OldestHeldBackMs();

 private:
  base::Mutex mu_;
  base::CondVar idle_;  // signalled when `writing_` ends
  bool writing_ GUARDED_BY(mu_) = false;
  std::vector<HeartbeatRow> deferred_ GUARDED_BY(mu_);
  // Of each deferred row, the oldest acceptance folded into it (its
  // accepted_ms is the newest); of the rows the write under way took, the
  // same.
  std::vector<int64_t> deferred_since_ GUARDED_BY(mu_);
  std::vector<int64_t> taken_since_ GUARDED_BY(mu_);
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_DEFERRED_HEARTBEATS_H_
