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
// of heartbeats, a reaper sweep. The Writer runs Apply on its thread inside
// an open write transaction and, after the transaction ends, calls Done with
// the outcome (see GroupJob).
class WriteJob : public GroupJob {
 public:
  // Runs inside the group's transaction. A non-Ok return undoes this job's
  // changes only, never those of the other jobs of the group: by a SAVEPOINT
  // of its own, or, for a job whose only write is one statement (see
  // needs_savepoint), by SQLite's own statement rollback. Keep it short: the
  // write lock is held. No network, no logging, no large JSON here.
  // Done then gets Ok only after COMMIT returned; else Apply's error, or the
  // transaction's (Busy, IOError) with nothing of the job written, except
  // when IsCommitOutcomeUnknown: the COMMIT itself failed (at its fsync), and
  // the whole group may or may not be there after a restart, never a part.
  // An Apply that throws or returns HalfWritten (store/status.h) without a
  // savepoint fails its whole group.
  virtual Status Apply(Db* db) = 0;
  // False for a job that writes with at most one statement: a failing
  // statement undoes itself, so a SAVEPOINT (two more statements and a
  // statement journal per job, about a tenth of a claim's cost) buys nothing.
  virtual bool needs_savepoint() const { return true; }
};

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

  // Queues `job` and takes it. Returns false if the writer is stopping or
  // max_queued_jobs are already waiting: then `job` is left with the caller,
  // untouched and with Done not called, so it can answer for itself, e.g.
  // `job->Done(Status::Busy(...))` (the server answers 503).
  bool Submit(std::unique_ptr<WriteJob>&& job);

  // Runs `fn` as one job and waits for its durable outcome. For admin paths,
  // tests and tools; never from an io thread or from the writer thread.
  Status RunSync(std::function<Status(Db*)> fn, bool solo = false) {
    return RunFunction<Db>(std::move(fn), solo);
  }

  const std::string& path() const { return name(); }

 private:
  // The SQLite transaction of a group: BEGIN IMMEDIATE under the shard's
  // write lock, a SAVEPOINT per job that needs one.
  Status Begin(std::span<WriteJob*>* group, Run run, bool* again) override;
  bool first_run_savepoints() const override { return true; }
  bool NeedsSavepoint(const WriteJob& job) const override { return job.needs_savepoint(); }
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
