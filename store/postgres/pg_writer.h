#ifndef EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_
#define EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_

#include <atomic>
#include <chrono>
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
  // Stop() runs the jobs accepted before it for at most this long; against a
  // store that keeps failing, the rest are answered unwritten then
  // (WriterStats::dropped_at_stop), so a stop never outlasts systemd's.
  int64_t stop_timeout_ms = 10000;
  // Told when this node's wall clock is found more than
  // max_clock_offset_ms from the database's, and when it is back within
  // half that (StorageOptions::warn).
  int64_t max_clock_offset_ms = 1000;
  std::function<void(const std::string&)> warn;
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
  // Refuses new jobs, runs every job accepted before (for at most
  // stop_timeout_ms; what is left then is answered unwritten), joins the
  // thread.
  void Stop();
  // Queues `job`, or returns false (full, stopping, or down()) leaving it
  // with the caller, Done not called.
  bool Submit(std::unique_ptr<PgJob>&& job);
  // True while the database cannot be reached: the writer's last attempt to
  // connect failed. New jobs are refused meanwhile (their callers answer
  // 503 at once instead of waiting a connect timeout each) while the writer
  // tries again every probe; a connect that succeeds ends it.
  bool down() const { return down_.load(std::memory_order_relaxed); }
  // Runs `fn` as one job and waits for its durable outcome. Never from the
  // writer thread.
  Status RunSync(std::function<Status(PgConn*)> fn, bool solo = false);
  const WriterStats& stats() const { return stats_; }

 private:
  using Group = std::deque<std::unique_ptr<PgJob>>;
  using Firsts = std::vector<std::optional<std::pair<PgStatement, PgResult>>>;

  void Loop();
  void CommitGroup(Group* group);
  // The statements that open a group's transaction: BEGIN, the advisory
  // locks, the row locks.
  std::vector<PgStatement> Preamble(const Group& group) const;
  // The preamble, in one round trip.
  Status Begin(const Group& group, bool* lock_timeout);
  // The preamble and the jobs' First() statements, in one pipeline; their
  // results in (*firsts)[job] (nullopt for a job without). *failed_job if a
  // first statement failed (the transaction is then aborted); *lock_timeout
  // if a lock of the preamble was not had in lock_timeout_ms.
  Status BeginPipelined(const Group& group, Firsts* firsts, bool* failed_job,
                        bool* lock_timeout);
  // After the preamble's locks timed out: a new transaction that takes the
  // advisory locks to be had now without waiting and answers Busy (removing
  // them from *group) the jobs whose lock is not; the rows are then locked
  // by each job as it goes (each job under a savepoint, so one whose row
  // stays locked fails alone). Only the jobs that needed a lock another
  // transaction holds may fail: the rest of the group goes on.
  Status BeginWithoutWaiting(Group* group);
  // Catches what a job throws: the job fails, the group goes on.
  static Status ApplyJob(PgJob* job, PgConn* conn);
  void Answer(PgJob* job, Status status);
  Status RunJobs(Group* group, bool savepoints, Firsts* firsts, std::vector<Status>* outcomes,
                 bool* failed_job);
  // Connects if there is no usable connection; backs off after a failure.
  Status EnsureConnected();
  // Reads the database's clock (WriterStats::clock_offset_ms) on the open
  // connection.
  Status MeasureClock();
  // While idle: connects if needed and measures the clock; sets failing.
  void Probe();
  // Answers every queued job with `status`, unwritten; `at_stop`: counted
  // as dropped_at_stop (Stop's time ran out).
  void DropQueued(const Status& status, bool at_stop);

  const std::string uri_;
  const std::string application_name_;
  const PgWriterOptions options_;
  std::unique_ptr<PgConn> conn_;  // the writer thread's only
  int64_t backoff_ms_ = 0;        // the writer thread's only
  bool clock_warned_ = false;     // the writer thread's only
  std::atomic<bool> down_{false};  // written by the writer thread

  base::Mutex mu_;
  base::CondVar cv_;
  std::deque<std::unique_ptr<PgJob>> queue_ GUARDED_BY(mu_);
  bool accepting_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  // When Stop's time runs out (set by Stop).
  std::chrono::steady_clock::time_point stop_deadline_ GUARDED_BY(mu_);
  std::thread thread_;
  WriterStats stats_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_PG_WRITER_H_
