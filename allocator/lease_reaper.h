#ifndef EDGEALLOC_ALLOCATOR_LEASE_REAPER_H_
#define EDGEALLOC_ALLOCATOR_LEASE_REAPER_H_

#include <cstdint>
#include <functional>
#include <stop_token>
#include <thread>

#include "allocator/allocator_types.h"
#include "store/storage.h"

namespace allocator {

// The lease reaper: a thread that ends, every reaper_interval_ms, the
// sessions whose lease is over, in bounded sweeps of each partition, and
// prunes the history of ended sessions, off the claim path. The
// storage, options and stats must outlive it; Stop it before they go.
class LeaseReaper {
 public:
  // `ended` is called (on the reaper's thread) after a reap that ended any
  // session: their containers are free again.
  LeaseReaper(store::Storage* storage, const AllocatorOptions* options, AllocatorStats* stats,
              std::function<void()> ended);
  LeaseReaper(const LeaseReaper&) = delete;
  LeaseReaper& operator=(const LeaseReaper&) = delete;
  ~LeaseReaper() { Stop(); }

  // Not from two threads at once.
  void Start();
  void Stop();  // returns once the thread ended; Start may run it again

  // Ends the sessions of every partition whose lease is over, in bounded
  // sweeps; returns how many. The thread calls this; tests may too.
  int64_t ReapExpiredLeases();
  // Prunes the history of ended sessions of every partition (older than
  // session_history_ms, or past session_history_max_rows), in transactions
  // of history_prune_rows at most, a partition at most what
  // history_prune_rows_per_s allows in one history_prune_interval_ms;
  // returns how many went. The thread calls this every
  // history_prune_interval_ms; tests may too.
  int64_t PruneSessionHistory();
  // Prunes the event log of every partition (older than
  // event_retention_ms), as PruneSessionHistory the history; returns how
  // many went. The thread calls it with PruneSessionHistory.
  int64_t PruneEvents();

 private:
  void Loop(std::stop_token stop);
  // The rows one PruneSessionHistory deletes at most from each partition.
  int64_t PruneRowsPerPass() const;
  struct Pruned {
    int64_t rows = 0;
    int64_t failures = 0;  // partitions whose pass a failed batch cut short
  };
  // Runs `prune` over every partition in batches of history_prune_rows, up
  // to PruneRowsPerPass rows a partition.
  Pruned PruneInPasses(
      const std::function<store::Status(int partition, int rows, int64_t* pruned)>& prune);

  store::Storage* const storage_;
  const AllocatorOptions* const options_;
  AllocatorStats* const stats_;
  const std::function<void()> ended_;
  std::jthread thread_;  // its stop request wakes it from its sleep
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_LEASE_REAPER_H_
