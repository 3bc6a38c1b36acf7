#ifndef EDGEALLOC_STORE_GROUP_WRITER_H_
#define EDGEALLOC_STORE_GROUP_WRITER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/events.h"
#include "store/status.h"
#include "store/writer_stats.h"

namespace store {

// What every job of a writer is, whatever its engine: one claim, release,
// batch of heartbeats or sweep. An engine's job type (JobOn below: WriteJob
// for SQLite, PgJob for PostgreSQL) adds Apply, which runs inside the
// group's transaction. Done gets the durable outcome once the transaction
// ended; the job is deleted right after. Apply and Done should not throw; if one does,
// the writer catches it: an Apply that threw fails its job (undone by its
// savepoint), a Done that threw loses only its own reply. So does whatever
// else the writer thread runs (the engine's Begin, Commit, Rollback, Probe,
// a job's First or lock keys): an exception fails the group in hand (one
// from Commit with its outcome unknown), never the process.
class GroupJob {
 public:
  virtual ~GroupJob() = default;
  // Called on the writer thread once the outcome is durable. Must be quick:
  // hand the result to another thread, do not work here.
  virtual void Done(Status status) = 0;
  // A solo job gets a transaction of its own instead of joining a group
  // commit: sweeps and large batches, so they never lengthen a claim's.
  virtual bool solo() const { return false; }
  // Whether the job needs a savepoint to be undone alone on a run with them.
  // False only for a SQLite job that writes with at most one statement: a
  // failing statement undoes itself there, so a SAVEPOINT (two more
  // statements and a statement journal per job, about a tenth of a claim's
  // cost) buys nothing. PostgreSQL's jobs keep true: a failing statement
  // aborts its whole transaction.
  virtual bool needs_savepoint() const { return true; }
};

// An engine's job: a GroupJob that runs on the engine's connection (Db for
// SQLite's WriteJob, PgConn for PostgreSQL's PgJob), the type the writer
// core is instantiated for. Apply runs inside the group's transaction; the
// engine's job type says what more it asks of it.
template <typename Conn>
class JobOn : public GroupJob {
 public:
  using Connection = Conn;
  virtual Status Apply(Conn* conn) = 0;
};

struct GroupWriterOptions {
  // Jobs queued and not yet taken by the writer before Submit refuses (the
  // caller answers 503). The group being committed does not count.
  int max_queued_jobs = 65536;
  // Jobs committed together at most; a bound on one transaction's length.
  int max_group_jobs = 256;
  // Stop() runs the jobs accepted before it for at most this long; what is
  // left then is answered unwritten (WriterStats::dropped_at_stop), so that
  // a stop against a failing store never outlasts systemd's. Negative: no
  // bound (an embedded file's writes always end, each with its answer).
  int64_t stop_timeout_ms = -1;
};

// A GroupWriter is the one writer of a partition (docs/design.md rule 3): a
// thread that takes queued jobs in bulk and commits each bulk as one
// transaction (group commit), so a durable commit costs one flush per group
// instead of one per job. Consecutive ordinary jobs share a transaction, up
// to max_group_jobs; a solo job gets its own. A job that fails is undone
// alone (by a savepoint); a group fails whole only when its transaction
// does. Submit is safe from any thread; the connection is the writer
// thread's.
//
// GroupWriterBase is what does not depend on the engine's job type: the
// writer's life (Start, Stop), its state and its counters. GroupWriter<Job>
// is the core proper, its queue and hooks typed by the engine's job
// (WriteJob, PgJob), so no engine casts a job; an engine derives from it and
// says how a group's transaction is begun, how a job runs with or without a
// savepoint, how the group commits or rolls back, and (if it has one) how
// its connection is probed while idle. Its members are defined in
// store/group_writer_impl.h, instantiated by each engine's writer for its
// job type. The derived class's destructor must call Stop(): the thread
// calls those functions.
class GroupWriterBase {
 public:
  GroupWriterBase(const GroupWriterBase&) = delete;
  GroupWriterBase& operator=(const GroupWriterBase&) = delete;
  virtual ~GroupWriterBase();

  // Starts the writer thread.
  void Start();
  // Refuses new jobs, runs every job accepted before (bounded by
  // stop_timeout_ms, if set), then joins the thread. Every accepted job gets
  // its Done. Idempotent.
  void Stop();
  // True while the database cannot be reached (the engine's last connect
  // failed): Submit refuses meanwhile, so callers answer at once instead of
  // waiting a connect timeout each.
  bool down() const { return down_.load(std::memory_order_relaxed); }
  const WriterStats& stats() const { return stats_; }
  // For a job's own counters (an engine's), from the writer thread.
  WriterStats& mutable_stats() { return stats_; }
  // Where each successful commit is signalled (readers waiting for events);
  // null: nowhere. May be set while the writer runs.
  void set_commit_signal(CommitSignal* signal) {
    commit_signal_.store(signal, std::memory_order_release);
  }
  // The answer of a job Submit refused, `queue` naming the write queue:
  // unavailable while down(), else Busy (the server answers 503 overloaded).
  Status Refusal(const std::string& queue) const;

 protected:
  // The three runs a group's transaction may be begun for.
  enum class Run {
    kFirst,           // the engine's first try (first_run_savepoints() says how)
    kAgain,           // a job failed on a first run without savepoints: each job under one now
    kWithoutWaiting,  // the first try's locks were held elsewhere (lock_timed_out())
  };

  // `name` says which writer a refusal is about.
  GroupWriterBase(std::string name, GroupWriterOptions options);

  // Answers `job` (counted ok or failed), catching what Done throws, and
  // deletes it.
  void Finish(GroupJob* job, Status status);
  void set_down(bool down) { down_.store(down, std::memory_order_relaxed); }
  const std::string& name() const { return name_; }
  const GroupWriterOptions& options() const { return options_; }
  // Reserves a place in the queue for one job: false (counted refused) when
  // the writer is full, stopping or down(). Release it after the enqueue.
  bool Admit();
  void Admitted() { submitting_.fetch_sub(1); }
  bool stopping() const { return stop_.load(); }
  bool PastStopDeadline() const;

  WriterStats stats_;
  std::atomic<CommitSignal*> commit_signal_{nullptr};

 private:
  // The typed core's: the thread's loop, and a wake-up of an idle writer.
  virtual void Loop() = 0;
  virtual void Wake() = 0;

  const std::string name_;
  const GroupWriterOptions options_;
  std::thread thread_;
  std::atomic<bool> accepting_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> submitting_{0};
  std::atomic<bool> down_{false};
  std::atomic<int64_t> stop_deadline_ns_{0};  // steady clock; set by Stop
};

template <typename Job>
class GroupWriter : public GroupWriterBase {
 public:
  using Connection = typename Job::Connection;

  ~GroupWriter() override;

  // Queues `job` and takes it. Returns false if the writer is full,
  // stopping or down(): then `job` is left with the caller, untouched and
  // with Done not called, so it can answer for itself, e.g.
  // `job->Done(Refusal(...))` (the server answers 503). Safe from any
  // thread.
  bool Submit(std::unique_ptr<Job>&& job);
  // Runs `fn` as one job on the writer's connection and waits for its
  // durable outcome. For sweeps, admin paths, tests and tools; never from an
  // io thread or from the writer thread.
  Status RunSync(std::function<Status(Connection*)> fn, bool solo = false);

 protected:
  GroupWriter(std::string name, GroupWriterOptions options);

  // The engine's part: the hooks, all called on the writer thread, never
  // two at once.
  //
  // Required (pure virtual): Begin, first_run_savepoints, Savepoint,
  // EndSavepoint, Apply, TransactionLost, Commit, Rollback. Optional, and
  // only PostgreSQL overrides them (a connection over a network,
  // which can be lost or stall, whose lock waits time out, and which is
  // probed while idle): AfterApply, lock_timed_out, GroupLost,
  // probe_interval_ms, Probe, AfterThrow. Begin's *again, and so
  // Run::kAgain and Run::kWithoutWaiting, are PostgreSQL's too: SQLite
  // never sets *again, gives each first run its savepoints, and its
  // lock_timed_out() is always false.
  //
  // Their order, for each group (consecutive ordinary jobs, or one solo job):
  //
  //   Begin(group, kFirst, &again)
  //   unless again, for each job i (RunJobs):
  //     Savepoint()                  if first_run_savepoints() && job->needs_savepoint()
  //     Apply(job, i), AfterApply(&outcome)
  //     TransactionLost(outcome)     true: the group fails (to Rollback below)
  //     EndSavepoint(!outcome.ok())  if it had a savepoint; a failed job without
  //                                  one: on a run without savepoints, sets again
  //                                  and stops the run; on a run with them, fails
  //                                  alone (the group, if it threw or half wrote)
  //   if again:     Rollback(), Begin(group, kAgain, &again), the jobs each
  //                 under a savepoint (if it needs one)
  //   if that failed and lock_timed_out():
  //                 Rollback(), Begin(group, kWithoutWaiting, &again), the
  //                 jobs as for kAgain
  //   Commit()      if all that went well, else Rollback();
  //   GroupLost(s)  if the group failed: whether the queued jobs get s too.
  //
  // Each job's Done comes after Commit (or the failure) returned. While no
  // job is queued: Probe() every probe_interval_ms() (never if negative).
  // AfterThrow() after any hook but Apply threw (a throwing Apply fails its
  // own job, as an error would).

  // Opens the group's transaction (connecting first if need be). May run
  // statements of the jobs ahead, then *again if one of them failed (the
  // group is then run kAgain). kWithoutWaiting may answer (Finish) and drop
  // from *group the jobs that need what another transaction holds.
  virtual Status Begin(std::span<Job*>* group, Run run, bool* again) = 0;
  // Whether the kFirst run gives each job a savepoint; without, a job that
  // fails makes the group run again with them (fewer round trips while no
  // job fails).
  virtual bool first_run_savepoints() const = 0;
  virtual Status Savepoint() = 0;
  // Releases the savepoint; `undo`: rolls back to it first.
  virtual Status EndSavepoint(bool undo) = 0;
  // Runs the group's index-th job on the connection.
  virtual Status Apply(Job* job, size_t index) = 0;
  // After Apply returned or threw; may turn an Ok into an error.
  virtual void AfterApply(Status* outcome) {}
  // Whether the transaction is gone (the connection lost, or the database
  // rolled it back on its own) after a job's `outcome`.
  virtual bool TransactionLost(const Status& outcome) = 0;
  // Commits; an error says whether the outcome is unknown.
  virtual Status Commit() = 0;
  virtual Status Rollback() = 0;
  // Whether the last Begin failed for a lock another transaction held.
  virtual bool lock_timed_out() const { return false; }
  // After a group failed whole with `status`: whether the jobs queued
  // behind it would only wait for the same answer (then they get it).
  virtual bool GroupLost(const Status& status) { return false; }
  // The idle writer's probe, every probe_interval_ms() (negative: never).
  virtual int64_t probe_interval_ms() const { return -1; }
  virtual void Probe() {}
  // After the engine's code threw (Begin, a savepoint, Commit, Rollback,
  // Probe): its connection may be midway through something (a pipeline half
  // read), so it is not to be used again as it is.
  virtual void AfterThrow() {}

 private:
  struct Queue;
  void Loop() override;
  void Wake() override;
  // Runs a bulk of dequeued jobs as its groups.
  void RunBulk(Job** jobs, size_t n);
  // Runs one group in one transaction and answers its jobs; true if what is
  // queued is to be answered with the group's error too.
  bool RunGroup(std::span<Job*> group);
  // Begin, the jobs, and the runs again they may need; *group may shrink
  // (Run::kWithoutWaiting).
  Status BeginAndRun(std::span<Job*>* group);
  // fn(), with an exception turned into an IOError saying `what` threw
  // (and AfterThrow called); *threw says whether it did.
  template <typename Fn>
  Status Catching(const char* what, Fn fn, bool* threw = nullptr);
  Status RunJobs(std::span<Job*> group, bool savepoints, bool* again);
  Status ApplyCatching(Job* job, size_t index, bool* threw);
  // Answers the jobs in hand and every queued one with `status`, unwritten.
  void DropQueued(std::span<Job*> in_hand, const Status& status, bool at_stop);

  std::unique_ptr<Queue> queue_;
  std::vector<Status> outcomes_;  // the writer thread's: the group's
};

namespace internal {

// A job made of a function, for RunSync. It owns its promise, so that
// the caller's future outlives nothing of the writer's.
template <typename Job, typename Conn>
class FunctionJob final : public Job {
 public:
  FunctionJob(std::function<Status(Conn*)> fn, bool solo) : fn_(std::move(fn)), solo_(solo) {}
  Status Apply(Conn* conn) override { return fn_(conn); }
  void Done(Status status) override { done_.set_value(std::move(status)); }
  bool solo() const override { return solo_; }
  std::future<Status> future() { return done_.get_future(); }

 private:
  std::function<Status(Conn*)> fn_;
  bool solo_;
  std::promise<Status> done_;
};

}  // namespace internal

template <typename Job>
Status GroupWriter<Job>::RunSync(std::function<Status(Connection*)> fn, bool solo) {
  auto job = std::make_unique<internal::FunctionJob<Job, Connection>>(std::move(fn), solo);
  std::future<Status> done = job->future();
  if (!Submit(std::move(job))) return Refusal("the write queue of " + name());
  return done.get();
}

}  // namespace store

#endif  // EDGEALLOC_STORE_GROUP_WRITER_H_
