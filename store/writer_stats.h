#ifndef EDGEALLOC_STORE_WRITER_STATS_H_
#define EDGEALLOC_STORE_WRITER_STATS_H_

#include <atomic>
#include <cstdint>

namespace store {

// Counters of one writer of a storage engine: the single thread that commits
// a partition's writes in groups (DESIGN.md rule 3), for /metrics and
// benchmarks. Written by that thread and by submitters; read from any thread.
struct WriterStats {
  std::atomic<uint64_t> transactions{0};
  std::atomic<uint64_t> jobs_ok{0};
  std::atomic<uint64_t> jobs_failed{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> commit_micros_total{0};
  // Groups that failed whole (SQLite rolled back on its own after an I/O
  // error or a full disk, a job's savepoint could not be rolled back or
  // released, a job without one threw, or COMMIT failed): every job of such
  // a group is answered with the error, and nothing of it is written (after
  // a failed COMMIT: nothing, or all of it; see WriteJob::Done).
  std::atomic<uint64_t> transactions_lost{0};
  // Done calls that threw (their reply is lost; the writer went on).
  std::atomic<uint64_t> done_exceptions{0};
  std::atomic<int64_t> queued{0};
  // 1 while the writer has a working connection to its database, 0 while it
  // is reconnecting (an embedded SQLite file is always 1); and how many times
  // it connected again after losing one.
  std::atomic<int64_t> connected{1};
  std::atomic<uint64_t> reconnects{0};
  // Groups run a second time, each job under a savepoint, because one job
  // failed on the fast path (PostgreSQL; SQLite gives each job a savepoint
  // at once).
  std::atomic<uint64_t> groups_rerun{0};
};

}  // namespace store

#endif  // EDGEALLOC_STORE_WRITER_STATS_H_
