#ifndef EDGEALLOC_STORE_SQLITE_WRITER_H_
#define EDGEALLOC_STORE_SQLITE_WRITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "store/sqlite/db.h"
#include "store/status.h"
#include "store/writer_stats.h"

namespace store {

// A WriteJob is one unit of a shard's write path: a claim, a release, a batch
// of heartbeats, a reaper sweep. The Writer runs Apply on its thread inside
// an open write transaction and, after the transaction ends, calls Done with
// the outcome. The job is deleted right after Done.
class WriteJob {
 public:
  virtual ~WriteJob() = default;
  // Runs inside the group's transaction. A non-Ok return undoes this job's
  // changes only, never those of the other jobs of the group: by a SAVEPOINT
  // of its own, or, for a job whose only write is one statement (see
  // needs_savepoint), by SQLite's own statement rollback. Keep it short: the
  // write lock is held. No network, no logging, no large JSON here.
  virtual Status Apply(Db* db) = 0;
  // Called on the writer thread once the outcome is durable: Ok only after
  // COMMIT returned; else Apply's error, or the transaction's (Busy, IOError)
  // with nothing of the job written, except when IsCommitOutcomeUnknown: the
  // COMMIT itself failed (at its fsync), and the whole group may or may not
  // be there after a restart, never a part. Must be quick: hand the result to
  // another thread (post to an io executor, set a promise), do not work here.
  // Apply and Done should not throw; if one does, the writer catches it:
  // an Apply that threw fails its job (its whole group if the job has no
  // savepoint), a Done that threw loses only its own reply.
  virtual void Done(Status status) = 0;
  // A solo job gets a transaction of its own instead of joining a group
  // commit: sweeps and large batches, so they never lengthen a claim's.
  virtual bool solo() const { return false; }
  // False for a job that writes with at most one statement: a failing
  // statement undoes itself, so a SAVEPOINT (two more statements and a
  // statement journal per job, about a tenth of a claim's cost) buys nothing.
  virtual bool needs_savepoint() const { return true; }
};

struct WriterOptions {
  // Jobs queued and not yet taken by the writer before Submit refuses (the
  // caller answers 503). The group being committed does not count.
  int max_queued_jobs = 65536;
  // Jobs committed together at most; a bound on one transaction's length.
  int max_group_jobs = 256;
};

// A Writer is the one writer of a shard (docs/design.md rule 3): it owns the
// shard's writable connection and a thread that takes queued jobs in bulk and
// commits each bulk as one transaction (group commit), so synchronous=FULL
// costs one fsync per group instead of one per job. Submit is safe from any
// thread; everything else about the connection happens on the writer thread.
class Writer {
 public:
  // Takes ownership of `db`, which must be writable and migrated.
  Writer(std::unique_ptr<Db> db, WriterOptions options = {});
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  // Stops (draining what was accepted) if still running.
  ~Writer();

  // Starts the writer thread.
  void Start();
  // Refuses new jobs, runs every job accepted before, then joins the thread.
  // Every accepted job gets its Done. Idempotent.
  void Stop();

  // Queues `job` and takes it. Returns false if the writer is stopping or
  // max_queued_jobs are already waiting: then `job` is left with the caller,
  // untouched and with Done not called, so it can answer for itself, e.g.
  // `job->Done(Status::Busy(...))` (the server answers 503).
  bool Submit(std::unique_ptr<WriteJob>&& job);

  // Runs `fn` as one job and waits for its durable outcome. For admin paths,
  // tests and tools; never from an io thread or from the writer thread.
  Status RunSync(std::function<Status(Db*)> fn, bool solo = false);

  const WriterStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

 private:
  struct Queue;
  void Loop();
  // Runs jobs[0..n) in one transaction and calls each one's Done.
  void CommitGroup(WriteJob** jobs, size_t n);

  std::unique_ptr<Db> db_;  // touched only by the writer thread once started
  std::string path_;
  WriterOptions options_;
  std::unique_ptr<Queue> queue_;
  std::thread thread_;
  std::atomic<bool> accepting_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> submitting_{0};
  WriterStats stats_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_WRITER_H_
