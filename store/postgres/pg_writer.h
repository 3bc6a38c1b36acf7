#ifndef EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_
#define EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "store/group_writer.h"
#include "store/postgres/db_clock.h"
#include "store/postgres/fence.h"
#include "store/postgres/pg.h"
#include "store/status.h"

namespace store {

// One unit of the PostgreSQL write path (a claim, a release, a batch of
// heartbeats, a sweep), as WriteJob is for SQLite: Apply(PgConn*) runs inside the
// group's transaction; if it (or another job) fails, the group is run again
// with each job under a savepoint of its own, so Apply must start afresh
// each time it runs (reset its result). Done gets the durable outcome after
// COMMIT (Ok), or the error with nothing of the job written (see GroupJob).
// "unavailable" in an IOError's message: the connection was lost; if it was
// lost during COMMIT, the outcome is unknown (kCommitOutcomeUnknown prefix).
class PgJob : public JobOn<PgConn> {
 public:
  // The statement Apply runs first, if it is known before the group starts
  // (its parameters depend on no earlier result): the writer sends the
  // first statements of a group's jobs in one pipeline after BEGIN and the
  // locks, one round trip for them all, and Apply's Run of it is then
  // answered from there (PgConn::Expect). Must return the same statement
  // each call. A job whose Apply does not run it first makes the group run
  // again without the pipeline.
  virtual std::optional<PgStatement> First() const { return std::nullopt; }
  // The advisory locks (pgsql::kLockTenant's keys: a tenant's quota, an
  // idempotency key) Apply needs held to the commit. The writer takes those
  // of every job of a group right after BEGIN, sorted: every node's writer
  // then takes them in one order,
  // so two nodes' groups never wait on each other in a cycle. (Taken job by
  // job, they did: PostgreSQL broke each cycle after deadlock_timeout, 1 s,
  // failing one job, and the next job of the group met the same cycle again,
  // the earlier jobs' locks being held to the commit.)
  virtual void AddLockKeys(std::vector<std::string>* keys) const {}
  // The container rows Apply will change, by id and by session id, if known
  // before the group starts. The writer locks those of every job of a group
  // right after the advisory locks, in one statement, in id order
  // (pgsql::kLockRows): a group then waits for rows in one place and in one
  // order on every node, so overlapping groups of two nodes (heartbeat
  // batches, registrations, releases) never deadlock. A job that names none
  // and waits for a row (a claim never does: SKIP LOCKED) waits as before.
  virtual void AddRowLocks(std::vector<std::string>* ids,
                           std::vector<std::string>* session_ids) const {}
};

// The container rows a job will change, by id and by session id, as a job
// names them (PgJob::AddRowLocks).
struct PgRowLocks {
  std::vector<std::string> ids;
  std::vector<std::string> session_ids;
};

struct PgWriterOptions : GroupWriterOptions {
  // Against a store that keeps failing, a stop never outlasts systemd's.
  PgWriterOptions() { stop_timeout_ms = 10000; }
  // The longest a statement waits for a lock (a row, a tenant's advisory
  // lock) another transaction holds: past it the group fails as Busy (503
  // overloaded, Retry-After), never a wait without end behind a stalled node.
  int64_t lock_timeout_ms = 3000;
  // PostgreSQL ends this writer's session if it sits inside a transaction
  // that long without sending anything (a node stalled or vanished
  // mid-group: SIGSTOP, a hung or partitioned machine), so the locks it held
  // go back to the other nodes. Our groups never pause between statements.
  int64_t idle_in_transaction_timeout_ms = 10000;
  // The longest one statement runs (server side): no statement of ours
  // takes a fraction of it but for a lock wait (lock_timeout_ms), so one
  // that does is stuck.
  int64_t statement_timeout_ms = 5000;
  // The longest an answer is waited for on this side (PgConn's io timeout):
  // a link that stalls without closing answers nothing and times out by
  // nothing else, and every request queued behind the group waits as long.
  // Past it the group fails "unavailable" (a COMMIT's outcome unknown) and
  // the writer reconnects (connect_timeout 5 s).
  int64_t io_timeout_ms = 5000;
  // An idle writer asks the database its time this often: the clock offset
  // (WriterStats::clock_offset_ms), and whether the database can still be
  // reached when nothing is written (WriterStats::failing), so that a node
  // cut off from it says so (/readyz, heartbeats) before a write finds out.
  int64_t probe_interval_ms = 1000;
  // Told when this node's wall clock is found more than
  // max_clock_offset_ms from the database's, and when it is back within
  // half that (StorageOptions::warn).
  int64_t max_clock_offset_ms = 1000;
  std::function<void(const std::string&)> warn;
  // The node's fence against an old primary (store/postgres/fence.h), shared
  // by all its connections; none: unfenced.
  std::shared_ptr<PgFence> fence;
  // The node's watch on steps of the database's clock (db_clock.h), shared
  // by its writers, fed by their readings; none: steps are not watched.
  std::shared_ptr<DbClockSteps> clock_steps;
};

// A PgWriter is the one writer of a PostgreSQL partition on this node: one
// connection under a GroupWriter<PgJob>, so a synchronous commit costs one WAL
// flush (and one standby round trip) per group, not per claim. A group's
// BEGIN, its locks and its jobs' first statements go in one pipeline, and its
// jobs run without savepoints until one fails. A lost connection fails the
// jobs of the group in hand with "unavailable" (the server answers 503) and
// is made again before the next group, with backoff. Submit and RunSync are
// safe from any thread.
class PgWriter final : public GroupWriter<PgJob> {
 public:
  PgWriter(std::string uri, std::string application_name, PgWriterOptions options = {});
  ~PgWriter() override;

  // Submit and RunSync are the core's (store/group_writer.h); both refuse
  // while down(): the writer's last attempt to connect failed. It tries
  // again every probe, and a connect that succeeds ends it.
  // A reading of the database's clock taken on this writer's connection:
  // its offset (WriterStats::clock_offset_ms) and the warnings about it.
  // Not a trusted one (a slow round trip): ignored once an offset is known.
  void NoteClockReading(const DbClockReading& reading);
  // Counts heartbeat rows a batch skipped for a lock another transaction
  // held, and how many the partition keeps for a later write now.
  void CountHeartbeatRetries(uint64_t skipped, int64_t deferred) {
    stats_.heartbeat_rows_skipped.fetch_add(skipped, std::memory_order_relaxed);
    stats_.heartbeat_rows_deferred.store(deferred, std::memory_order_relaxed);
  }

 private:
  using Firsts = std::vector<std::optional<std::pair<PgStatement, PgResult>>>;

  // kFirst: connects if need be, then BeginPipelined; kAgain: the preamble
  // alone; kWithoutWaiting: BeginWithoutWaiting.
  Status Begin(std::span<PgJob*>* group, Run run, bool* again) override;
  bool first_run_savepoints() const override { return false; }
  Status Savepoint() override;
  Status EndSavepoint(bool undo) override;
  Status Apply(PgJob* job, size_t index) override;
  // A first statement the pipeline ran that Apply never asked for.
  void AfterApply(Status* outcome) override;
  // A lost connection is the transaction's, not the job's.
  bool TransactionLost(const Status& outcome) override { return !conn_->ok(); }
  Status Commit() override;
  Status Rollback() override;
  bool lock_timed_out() const override { return lock_timeout_; }
  bool GroupLost(const Status& status) override;
  int64_t probe_interval_ms() const override;
  // While idle: connects if needed and measures the clock; sets failing.
  void Probe() override;
  // Closes the connection (PostgreSQL rolls back what it had open); the
  // next group or probe connects afresh.
  void AfterThrow() override;

  // The statements that open a group's transaction: BEGIN, the advisory
  // locks, the row locks.
  std::vector<PgStatement> Preamble(std::span<PgJob*> group) const;
  // The preamble and the jobs' First() statements, in one pipeline; their
  // results in firsts_[job] (nullopt for a job without). *failed_job if a
  // first statement failed (the transaction is then aborted); lock_timeout_
  // if a lock of the preamble was not had in lock_timeout_ms.
  // *reading: the database's clock, read in the same pipeline.
  Status BeginPipelined(std::span<PgJob*> group, bool* failed_job, DbClockReading* reading);
  // The shift due for a step of the database's clock no one has shifted
  // for, as `reading` finds it (taken in by the node's DbClockSteps; the
  // offset follows a step); 0: none. *expected_shifts: for the claim.
  int64_t StepDue(const DbClockReading& reading, int64_t* expected_shifts);
  Status StepStillDue() const;  // Busy: the group waits for the shift
  // Outside any transaction: reads the clock, and shifts for a step due.
  Status ShiftBeforeGroup();
  // Outside any transaction: the shift, in a transaction of its own,
  // claimed for the fleet (ClaimClockShift); a claim lost is no error.
  Status ShiftForStep(int64_t expected_shifts, int64_t shift_ms);
  // After the preamble's locks timed out: a new transaction that takes the
  // advisory locks to be had now without waiting and answers Busy (removing
  // them from *group) the jobs whose lock is not; the rows are then locked
  // by each job as it goes (each job under a savepoint, so one whose row
  // stays locked fails alone). Only the jobs that needed a lock another
  // transaction holds may fail: the rest of the group goes on.
  Status BeginWithoutWaiting(std::span<PgJob*>* group);
  // Connects if there is no usable connection; backs off after a failure.
  Status EnsureConnected();
  // Reads the database's clock (WriterStats::clock_offset_ms) on the open
  // connection, and shifts for a step of it that is due (db_clock.h), in a
  // transaction of its own.
  Status MeasureClock();

  const std::string uri_;
  const std::string application_name_;
  const PgWriterOptions options_;
  // The writer thread's only:
  std::unique_ptr<PgConn> conn_;
  int64_t backoff_ms_ = 0;
  bool clock_warned_ = false;
  bool lock_timeout_ = false;
  Firsts firsts_;

};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_
