#ifndef EDGEALLOC_STORE_WRITER_STATS_H_
#define EDGEALLOC_STORE_WRITER_STATS_H_

#include <atomic>
#include <cstdint>

namespace store {

// Counters of one writer of a storage engine: the single thread that commits
// a partition's writes in groups (docs/design.md rule 3), for /metrics and
// benchmarks. Written by that thread and by submitters; read from any thread.
// Kept by the writer core (store/group_writer.h) for both engines.
struct WriterStats {
  // Groups committed, and the time they took, from their start to COMMIT.
  std::atomic<uint64_t> transactions{0};
  std::atomic<uint64_t> jobs_ok{0};
  std::atomic<uint64_t> jobs_failed{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> commit_micros_total{0};
  // Groups that failed whole (the transaction could not begin, SQLite rolled
  // back on its own after an I/O error or a full disk, the connection was
  // lost, a job's savepoint could not be rolled back or released, a job
  // without one threw, or COMMIT failed): every job of such a group is
  // answered with the error, and nothing of it is written (after a failed
  // COMMIT: nothing, or all of it; see WriteJob::Done).
  std::atomic<uint64_t> transactions_lost{0};
  // Done calls that threw (their reply is lost; the writer went on).
  std::atomic<uint64_t> done_exceptions{0};
  // Exceptions from the engine's side of the writer (beginning a group, a
  // job's lock keys or first statement, a savepoint, COMMIT, ROLLBACK, the
  // idle probe): each failed its group (a probe's: nothing), and the
  // writer went on.
  std::atomic<uint64_t> writer_exceptions{0};
  std::atomic<int64_t> queued{0};
  // 1 while the writer has a working connection to its database, 0 while it
  // is reconnecting (an embedded SQLite file is always 1); and how many times
  // it connected again after losing one.
  std::atomic<int64_t> connected{1};
  std::atomic<uint64_t> reconnects{0};
  // 1 while the writer cannot write: its last attempt (a group, or its idle
  // probe once a second) failed for want of the database (a lost or refused
  // connection, a link that stalled past its timeouts); 0 again after the
  // next commit or probe that succeeds. /readyz and the heartbeat route
  // answer 503 while any partition's writer is failing. PostgreSQL only: an
  // embedded SQLite file is always there (its write errors are each write's
  // answer), so its writers stay 0.
  std::atomic<int64_t> failing{0};
  // PostgreSQL: the database's wall clock minus this node's, in ms, as last
  // measured (at connect and on the idle probe; half a round trip of error),
  // and 1 once measured. The database's clock is the fleet's (leases,
  // idempotency, silence); a large offset means this node's wall clock is
  // wrong, which no longer decides anything but its logs.
  std::atomic<int64_t> clock_offset_ms{0};
  std::atomic<int64_t> clock_offset_known{0};
  // PostgreSQL: COMMITs that succeeded with a WARNING, which is how the
  // database says it stopped waiting for the synchronous standby
  // (pg_cancel_backend, statement_timeout): committed on the primary, maybe
  // not on the standby. Their jobs were answered "commit outcome unknown".
  std::atomic<uint64_t> commits_not_replicated{0};
  // PostgreSQL heartbeat batches: rows skipped because another transaction
  // held their container's row (each try counts), and the rows the
  // partition keeps for a later write now (written with its next batch or
  // before its next silence sweep).
  std::atomic<uint64_t> heartbeat_rows_skipped{0};
  std::atomic<int64_t> heartbeat_rows_deferred{0};
  // How far off that measure may be, in ms (half its round trip, and the
  // clocks' millisecond steps).
  std::atomic<int64_t> clock_offset_error_ms{0};
  // Jobs answered unwritten because Stop's time ran out against a failing
  // store (their callers got an error; nothing of them was written).
  std::atomic<uint64_t> dropped_at_stop{0};
  // Groups run a second time, each job under a savepoint, because one job
  // failed on the fast path (PostgreSQL; SQLite gives each job a savepoint
  // at once).
  std::atomic<uint64_t> groups_rerun{0};
  // SQLite: claims under a selector whose open-rows form took nothing, so
  // that the checking form ran after it (store/sqlite/claim_selector.h,
  // RunClaimStatements): its pick was not claimable, or nothing was (no
  // capacity, the quota, the key). PostgreSQL: always 0.
  std::atomic<uint64_t> selector_claims_rechecked{0};
};

}  // namespace store

#endif  // EDGEALLOC_STORE_WRITER_STATS_H_
