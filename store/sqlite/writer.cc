#include "store/sqlite/writer.h"

#include <chrono>
#include <exception>
#include <future>
#include <vector>

#include "concurrentqueue/blockingconcurrentqueue.h"

namespace store {
namespace {

// How long the writer sleeps on an empty queue before it looks at stop_.
constexpr auto kIdleWait = std::chrono::milliseconds(20);

constexpr char kSavepointSql[] = "SAVEPOINT job";
constexpr char kReleaseSql[] = "RELEASE job";
constexpr char kRollbackToSql[] = "ROLLBACK TO job";

Status RunCached(Db* db, const char* sql) {
  Status s;
  StatementRef stmt;
  RETURN_IF_ERROR(db->Cached(sql, &stmt));
  return stmt->Run();
}

class FunctionJob : public WriteJob {
 public:
  FunctionJob(std::function<Status(Db*)> fn, bool solo) : fn_(std::move(fn)), solo_(solo) {}
  Status Apply(Db* db) override { return fn_(db); }
  void Done(Status status) override { done_.set_value(std::move(status)); }
  bool solo() const override { return solo_; }
  std::future<Status> future() { return done_.get_future(); }

 private:
  std::function<Status(Db*)> fn_;
  bool solo_;
  std::promise<Status> done_;
};

}  // namespace

struct Writer::Queue {
  moodycamel::BlockingConcurrentQueue<WriteJob*> q;
};

Writer::Writer(std::unique_ptr<Db> db, WriterOptions options)
    : db_(std::move(db)), path_(db_->path()), options_(options), queue_(new Queue) {}

Writer::~Writer() { Stop(); }

void Writer::Start() {
  accepting_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void Writer::Stop() {
  accepting_ = false;
  // A Submit that saw accepting_ before it flipped finishes its enqueue
  // before the writer is told to stop, so no accepted job is stranded.
  while (submitting_.load() != 0) std::this_thread::yield();
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool Writer::Submit(std::unique_ptr<WriteJob>&& job) {
  submitting_.fetch_add(1);
  // Reserve the slot first and give it back on refusal, so that concurrent
  // Submits cannot together pass the bound.
  bool ok = false;
  if (accepting_.load()) {
    ok = stats_.queued.fetch_add(1, std::memory_order_relaxed) < options_.max_queued_jobs;
    if (!ok) stats_.queued.fetch_sub(1, std::memory_order_relaxed);
  }
  if (ok) {
    queue_->q.enqueue(job.release());
  } else {
    stats_.refused.fetch_add(1, std::memory_order_relaxed);
  }
  submitting_.fetch_sub(1);
  return ok;
}

Status Writer::RunSync(std::function<Status(Db*)> fn, bool solo) {
  auto job = std::make_unique<FunctionJob>(std::move(fn), solo);
  std::future<Status> done = job->future();
  if (!Submit(std::move(job))) return Status::Busy("writer of " + path_ + " is full or stopping");
  return done.get();
}

void Writer::Loop() {
  std::vector<WriteJob*> jobs(static_cast<size_t>(options_.max_group_jobs));
  for (;;) {
    size_t n = queue_->q.wait_dequeue_bulk_timed(jobs.data(), jobs.size(), kIdleWait);
    if (n == 0) {
      if (stop_.load()) break;  // stop_ is set only after the last Submit finished
      continue;
    }
    stats_.queued.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
    // Consecutive ordinary jobs share one transaction; a solo job gets its own.
    size_t start = 0;
    for (size_t i = 0; i < n; ++i) {
      if (jobs[i]->solo()) {
        if (i > start) CommitGroup(&jobs[start], i - start);
        CommitGroup(&jobs[i], 1);
        start = i + 1;
      }
    }
    if (start < n) CommitGroup(&jobs[start], n - start);
  }
}

namespace {

// Runs job->Apply, turning an exception into a failed Status: an exception
// escaping the writer thread would end the process with accepted work
// (queued heartbeats, claims waiting for their reply) unanswered.
Status ApplyCatching(WriteJob* job, Db* db, bool* threw) {
  *threw = false;
  try {
    return job->Apply(db);
  } catch (const std::exception& e) {
    *threw = true;
    return Status::IOError(std::string("a write job threw: ") + e.what());
  } catch (...) {
    *threw = true;
    return Status::IOError("a write job threw");
  }
}

}  // namespace

void Writer::CommitGroup(WriteJob** jobs, size_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Status> outcomes(n);
  Transaction txn(db_.get());
  Status group = txn.Begin();
  if (group.ok()) {
    for (size_t i = 0; i < n && group.ok(); ++i) {
      const bool savepoint = jobs[i]->needs_savepoint();
      Status s = savepoint ? RunCached(db_.get(), kSavepointSql) : Status::Ok();
      if (!s.ok()) {
        // Without its savepoint the job cannot be undone alone; nothing of it ran.
        group = s;
        break;
      }
      bool threw = false;
      s = ApplyCatching(jobs[i], db_.get(), &threw);
      if (savepoint) {
        // On failure only this job's changes go; the savepoint is then released.
        Status end = s.ok() ? RunCached(db_.get(), kReleaseSql)
                            : RunCached(db_.get(), kRollbackToSql);
        if (!s.ok() && end.ok()) end = RunCached(db_.get(), kReleaseSql);
        if (!end.ok()) {
          // The job's changes may still be in the transaction, or the
          // savepoint stack is not what the next job expects: committing now
          // could write what this job is told failed. The whole group fails.
          group = end;
          break;
        }
      } else if (threw) {
        // A job without a savepoint writes with one statement, which undid
        // itself if it failed; but one that threw may have thrown after its
        // statement, which cannot be undone alone: the whole group fails.
        group = s;
        break;
      }
      outcomes[i] = std::move(s);
      if (!outcomes[i].ok() && db_->InAutocommit()) {
        // Some errors (I/O, full disk) make SQLite roll the whole transaction
        // back. The jobs before this one are gone with it, and the ones after
        // must not run outside a transaction: the whole group fails.
        group = outcomes[i];
        break;
      }
    }
    if (group.ok()) {
      group = txn.Commit();
      if (!group.ok()) {
        // A COMMIT that failed at its fsync may still have put the whole
        // group in the WAL, which recovery then replays: the jobs are told
        // they failed, but not that nothing of them is there. A client retry
        // with an idempotency key finds out.
        group = Status::IOError(kCommitOutcomeUnknown + group.message());
      }
    } else {
      txn.Rollback();
    }
    if (!group.ok()) stats_.transactions_lost.fetch_add(1, std::memory_order_relaxed);
  }
  stats_.transactions.fetch_add(1, std::memory_order_relaxed);
  stats_.commit_micros_total.fetch_add(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count(),
      std::memory_order_relaxed);
  // Done only now: no reply leaves before its commit has returned.
  for (size_t i = 0; i < n; ++i) {
    Status s = group.ok() ? std::move(outcomes[i]) : group;
    (s.ok() ? stats_.jobs_ok : stats_.jobs_failed).fetch_add(1, std::memory_order_relaxed);
    try {
      jobs[i]->Done(std::move(s));
    } catch (...) {
      // The outcome is decided and durable; a Done that throws has lost only
      // its own reply. The other jobs still get theirs, and the writer goes on.
      stats_.done_exceptions.fetch_add(1, std::memory_order_relaxed);
    }
    delete jobs[i];
  }
}

}  // namespace store
