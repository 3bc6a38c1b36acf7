#ifndef EDGEALLOC_STORE_SQLITE_WRITER_H_
#define EDGEALLOC_STORE_SQLITE_WRITER_H_

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "store/group_writer.h"
#include "store/sqlite/db.h"
#include "store/status.h"

namespace store {

// A WriteJob is one unit of a shard's write path: a claim, a release, a batch
// of heartbeats, a reaper sweep. The Writer runs Apply(Db*) on its thread
// inside an open write transaction and, after the transaction ends, calls
// Done with the outcome (see GroupJob).
//
// Apply runs inside the group's transaction. A non-Ok return undoes this
// job's changes only, never those of the other jobs of the group: by a
// SAVEPOINT of its own, or, for a job whose only write is one statement (see
// GroupJob::needs_savepoint), by SQLite's own statement rollback. Keep it
// short: the write lock is held. No network, no logging, no large JSON here.
// Done then gets Ok only after COMMIT returned; else Apply's error, or the
// transaction's (Busy, IOError) with nothing of the job written, except when
// IsCommitOutcomeUnknown: the COMMIT itself failed (at its fsync), and the
// whole group may or may not be there after a restart, never a part. An
// Apply that throws or returns HalfWritten (store/status.h) without a
// savepoint fails its whole group.
using WriteJob = JobOn<Db>;

// No stop_timeout_ms by default: a shard's file is always there, so Stop
// runs every accepted job.
using WriterOptions = GroupWriterOptions;

// A Writer is the one writer of a shard: it owns the shard's writable
// connection, and its GroupWriter<WriteJob> commits the jobs in groups, so
// synchronous=FULL costs one fsync per group instead of one per job.
class Writer final : public GroupWriter<WriteJob> {
 public:
  // Takes ownership of `db`, which must be writable and migrated.
  Writer(std::unique_ptr<Db> db, WriterOptions options = {});
  // Stops (draining what was accepted) if still running.
  ~Writer() override;

  // Submit and RunSync are the core's (store/group_writer.h).

  const std::string& path() const { return name(); }

 private:
  // The SQLite transaction of a group: BEGIN IMMEDIATE under the shard's
  // write lock (Transaction::Begin), a SAVEPOINT per job that needs one.
  Status Begin(std::span<WriteJob*>* group, Run run, bool* again) override;
  bool first_run_savepoints() const override { return true; }
  Status Savepoint() override;
  Status EndSavepoint(bool undo) override;
  Status Apply(WriteJob* job, size_t index) override { return job->Apply(db_.get()); }
  // Some errors (I/O, full disk) make SQLite roll the whole transaction back.
  bool TransactionLost(const Status& outcome) override;
  Status Commit() override;
  Status Rollback() override;

  std::unique_ptr<Db> db_;  // touched only by the writer thread once started
  Transaction txn_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_WRITER_H_
