#ifndef EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_
#define EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "store/postgres/pg.h"
#include "store/status.h"
#include "store/writer_stats.h"

namespace store {

// One unit of the PostgreSQL write path (a claim, a release, a batch of
// heartbeats, a sweep), as WriteJob is for SQLite: Apply runs inside the
// group's transaction; if it (or another job) fails, the group is run again
// with each job under a savepoint of its own, so Apply must start afresh
// each time it runs (reset its result). Done gets the durable outcome after
// COMMIT (Ok), or the error with nothing of the job written.
// "unavailable" in an IOError's message: the connection was lost; if it was
// lost during COMMIT, the outcome is unknown (kCommitOutcomeUnknown prefix).
class PgJob {
 public:
  virtual ~PgJob() = default;
  virtual Status Apply(PgConn* conn) = 0;
  virtual void Done(Status status) = 0;
  // A solo job gets a transaction of its own (sweeps, large batches).
  virtual bool solo() const { return false; }
  // The statement Apply runs first, if it is known before the group starts
  // (its parameters depend on no earlier result): the writer sends the
  // first statements of a group's jobs in one pipeline after BEGIN and the
  // locks, one round trip for them all, and Apply's Run of it is then
  // answered from there (PgConn::Expect). Must return the same statement
  // each call. A job whose Apply does not run it first makes the group run
  // again without the pipeline.
  virtual std::optional<PgStatement> First() const { return std::nullopt; }
  // The advisory locks (pgsql::kLockTenant's keys) Apply will take and hold
  // to the commit. The writer takes those of every job of a group right
  // after BEGIN, sorted: every node's writer then takes them in one order,
  // so two nodes' groups never wait on each other in a cycle. (Taken job by
  // job, they did: PostgreSQL broke each cycle after deadlock_timeout, 1 s,
  // failing one job, and the next job of the group met the same cycle again,
  // the earlier jobs' locks being held to the commit.)
  virtual void AddLockKeys(std::vector<std::string>* keys) const {}
};

struct PgWriterOptions {
  int max_queued_jobs = 65536;  // Submit refuses beyond (503 overloaded)
  int max_group_jobs = 256;     // jobs a transaction at most
  // The longest a statement waits for a lock (a row, a tenant's advisory
  // lock) another transaction holds: past it the group fails as Busy (503
  // overloaded, Retry-After), never a wait without end behind a stalled node.
  int64_t lock_timeout_ms = 3000;
  // PostgreSQL ends this writer's session if it sits inside a transaction
  // that long without sending anything (a node stalled or vanished
  // mid-group: SIGSTOP, a hung or partitioned machine), so the locks it held
  // go back to the other nodes. Our groups never pause between statements.
  int64_t idle_in_transaction_timeout_ms = 10000;
};

// A PgWriter is the one writer of a PostgreSQL partition on this node: a
// thread with one connection that takes queued jobs in bulk and commits each
// bulk as one transaction (group commit), so a synchronous commit costs one
// WAL flush (and one standby round trip) per group, not per claim. A lost
// connection fails the jobs of the group in hand with "unavailable" (the
// server answers 503) and is made again before the next group, with backoff.
// Submit and RunSync are safe from any thread.
class PgWriter {
 public:
  PgWriter(std::string uri, std::string application_name, PgWriterOptions options = {});
  PgWriter(const PgWriter&) = delete;
  PgWriter& operator=(const PgWriter&) = delete;
  ~PgWriter();

  void Start();
  // Refuses new jobs, runs every job accepted before, joins the thread.
  void Stop();
  // Queues `job`, or returns false (full or stopping) leaving it with the
  // caller, Done not called.
  bool Submit(std::unique_ptr<PgJob>&& job);
  // Runs `fn` as one job and waits for its durable outcome. Never from the
  // writer thread.
  Status RunSync(std::function<Status(PgConn*)> fn, bool solo = false);
  const WriterStats& stats() const { return stats_; }

 private:
  void Loop();
  void CommitGroup(std::deque<std::unique_ptr<PgJob>>* group);
  // BEGIN and the group's locks.
  Status Begin(const std::deque<std::unique_ptr<PgJob>>& group);
  // The same, and the jobs' First() statements, in one pipeline; their
  // results in (*firsts)[job] (nullopt for a job without). *failed_job if a
  // first statement failed (the transaction is then aborted).
  Status BeginPipelined(const std::deque<std::unique_ptr<PgJob>>& group,
                        std::vector<std::optional<std::pair<PgStatement, PgResult>>>* firsts,
                        bool* failed_job);
  Status RunJobs(std::deque<std::unique_ptr<PgJob>>* group, bool savepoints,
                 std::vector<std::optional<std::pair<PgStatement, PgResult>>>* firsts,
                 std::vector<Status>* outcomes, bool* failed_job);
  // Connects if there is no usable connection; backs off after a failure.
  Status EnsureConnected();

  const std::string uri_;
  const std::string application_name_;
  const PgWriterOptions options_;
  std::unique_ptr<PgConn> conn_;  // the writer thread's only
  int64_t backoff_ms_ = 0;        // the writer thread's only

  base::Mutex mu_;
  base::CondVar cv_;
  std::deque<std::unique_ptr<PgJob>> queue_ GUARDED_BY(mu_);
  bool accepting_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
  WriterStats stats_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_
