#include "store/postgres/pg_writer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <set>
#include <utility>

#include "base/clock.h"
#include "store/postgres/lifecycle_sql.h"

namespace store {
namespace {

// A job whose work is a function, for RunSync.
class FnJob : public PgJob {
 public:
  FnJob(std::function<Status(PgConn*)> fn, std::promise<Status>* done, bool solo)
      : fn_(std::move(fn)), done_(done), solo_(solo) {}
  Status Apply(PgConn* conn) override { return fn_(conn); }
  void Done(Status status) override { done_->set_value(std::move(status)); }
  bool solo() const override { return solo_; }

 private:
  std::function<Status(PgConn*)> fn_;
  std::promise<Status>* done_;
  bool solo_;
};

constexpr int64_t kMaxBackoffMs = 1000;

using SteadyClock = std::chrono::steady_clock;

}  // namespace

PgWriter::PgWriter(std::string uri, std::string application_name, PgWriterOptions options)
    : uri_(std::move(uri)), application_name_(std::move(application_name)), options_(options) {}

PgWriter::~PgWriter() { Stop(); }

void PgWriter::Start() {
  base::MutexLock lock(&mu_);
  accepting_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void PgWriter::Stop() {
  {
    base::MutexLock lock(&mu_);
    if (!stop_) {
      stop_deadline_ = SteadyClock::now() + std::chrono::milliseconds(options_.stop_timeout_ms);
    }
    accepting_ = false;
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

bool PgWriter::Submit(std::unique_ptr<PgJob>&& job) {
  {
    base::MutexLock lock(&mu_);
    if (!accepting_ || down() || static_cast<int>(queue_.size()) >= options_.max_queued_jobs) {
      stats_.refused.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    queue_.push_back(std::move(job));
    stats_.queued.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
  }
  cv_.Signal();
  return true;
}

Status PgWriter::RunSync(std::function<Status(PgConn*)> fn, bool solo) {
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  if (!Submit(std::make_unique<FnJob>(std::move(fn), &done, solo))) {
    return Status::Busy("the PostgreSQL write queue is full or stopping");
  }
  return result.get();
}

void PgWriter::Loop() {
  auto last_active = SteadyClock::now();
  for (;;) {
    Group group;
    bool probe = false, drop = false;
    {
      base::MutexLock lock(&mu_);
      while (queue_.empty() && !stop_) {
        // Down: try to connect again soon (EnsureConnected backs off).
        const auto due = last_active + std::chrono::milliseconds(
                                           down() ? std::min<int64_t>(options_.probe_interval_ms, 100)
                                                  : options_.probe_interval_ms);
        const auto now = SteadyClock::now();
        if (now >= due) {
          probe = true;
          break;
        }
        cv_.WaitFor(&mu_, due - now);
      }
      if (!probe) {
        if (queue_.empty()) return;  // stopping, and everything accepted is done
        if (stop_ && SteadyClock::now() >= stop_deadline_) {
          drop = true;
        } else {
          // A solo job alone; otherwise up to max_group_jobs jobs, stopping
          // before a solo one.
          group.push_back(std::move(queue_.front()));
          queue_.pop_front();
          while (!group.front()->solo() && !queue_.empty() && !queue_.front()->solo() &&
                 static_cast<int>(group.size()) < options_.max_group_jobs) {
            group.push_back(std::move(queue_.front()));
            queue_.pop_front();
          }
        }
        stats_.queued.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
      }
    }
    if (probe) {
      Probe();
    } else if (drop) {
      DropQueued(Status::IOError("unavailable: the server is stopping and PostgreSQL could not be "
                                 "written in time; not written"),
                 /*at_stop=*/true);
    } else {
      CommitGroup(&group);
    }
    last_active = SteadyClock::now();
  }
}

void PgWriter::DropQueued(const Status& status, bool at_stop) {
  Group left;
  {
    base::MutexLock lock(&mu_);
    left.swap(queue_);
    stats_.queued.store(0, std::memory_order_relaxed);
  }
  if (at_stop) stats_.dropped_at_stop.fetch_add(left.size(), std::memory_order_relaxed);
  stats_.jobs_failed.fetch_add(left.size(), std::memory_order_relaxed);
  for (auto& job : left) Answer(job.get(), status);
}

Status PgWriter::EnsureConnected() {
  if (conn_ != nullptr && conn_->ok()) return Status::Ok();
  stats_.connected.store(0, std::memory_order_relaxed);
  if (backoff_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms_));
  const bool again = conn_ != nullptr;
  Status s = again ? conn_->Reconnect() : PgConn::Connect(uri_, application_name_, &conn_);
  if (s.ok()) {
    // Every wait bounded: for a lock, for a statement (server side), for an
    // answer (PgConn's io timeout, client side: a link that stalls without
    // closing answers nothing, and the kernel's timeouts may never fire).
    conn_->set_io_timeout_ms(options_.io_timeout_ms);
    s = conn_->Exec("SET lock_timeout = " + std::to_string(options_.lock_timeout_ms) +
                    "; SET idle_in_transaction_session_timeout = " +
                    std::to_string(options_.idle_in_transaction_timeout_ms) +
                    "; SET statement_timeout = " + std::to_string(options_.statement_timeout_ms));
  }
  if (s.ok()) s = MeasureClock();
  backoff_ms_ = s.ok() ? 0 : std::clamp<int64_t>(backoff_ms_ * 2, 10, kMaxBackoffMs);
  down_.store(!s.ok(), std::memory_order_relaxed);
  if (s.ok()) {
    stats_.connected.store(1, std::memory_order_relaxed);
    if (again) stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats_.failing.store(1, std::memory_order_relaxed);
  }
  return s;
}

Status PgWriter::MeasureClock() {
  const int64_t before = base::NowMs();
  PgResult r;
  RETURN_IF_ERROR(conn_->Run(pgsql::kDbClockMs, {}, &r));
  const int64_t after = base::NowMs();
  if (r.rows() == 1) {
    // The database read its clock somewhere in the round trip: its middle
    // is the best guess, wrong by half the round trip at most.
    const int64_t offset = r.Int64(0, 0) - (before + after) / 2;
    stats_.clock_offset_ms.store(offset, std::memory_order_relaxed);
    stats_.clock_offset_known.store(1, std::memory_order_relaxed);
    const int64_t size = offset < 0 ? -offset : offset;
    if (options_.warn && !clock_warned_ && size > options_.max_clock_offset_ms) {
      clock_warned_ = true;
      options_.warn(application_name_ + ": this node's wall clock is " + std::to_string(-offset) +
                    " ms off the database's (beyond " +
                    std::to_string(options_.max_clock_offset_ms) +
                    " ms). Leases, idempotency and silence use the database's clock, so nothing "
                    "is decided wrongly; fix the node's time (NTP) so that its logs agree.");
    } else if (options_.warn && clock_warned_ && size <= options_.max_clock_offset_ms / 2) {
      clock_warned_ = false;
      options_.warn(application_name_ + ": this node's wall clock is back within " +
                    std::to_string(size) + " ms of the database's");
    }
  }
  return Status::Ok();
}

void PgWriter::Probe() {
  // A (re)connect measures the clock itself; an open connection is asked.
  const bool open = conn_ != nullptr && conn_->ok();
  Status s = EnsureConnected();
  if (s.ok() && open) s = MeasureClock();
  stats_.failing.store(s.ok() ? 0 : 1, std::memory_order_relaxed);
}

Status PgWriter::ApplyJob(PgJob* job, PgConn* conn) {
  try {
    return job->Apply(conn);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("a write job threw: ") + e.what());
  } catch (...) {
    return Status::IOError("a write job threw");
  }
}

void PgWriter::Answer(PgJob* job, Status status) {
  try {
    job->Done(std::move(status));
  } catch (...) {
    // Its reply is lost; the writer and the rest of the group go on.
    stats_.done_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
}

// Runs the group's jobs inside an open transaction. `savepoints`: each job
// under one of its own, so a failing job is undone alone and the rest go on;
// without, the first failing job stops the run (*failed_job, the transaction
// is then aborted). Returns a transaction-level error (the group fails
// whole), else Ok with each job's outcome in *outcomes.
Status PgWriter::RunJobs(Group* group, bool savepoints, Firsts* firsts,
                         std::vector<Status>* outcomes, bool* failed_job) {
  *failed_job = false;
  outcomes->assign(group->size(), Status::Ok());
  for (size_t i = 0; i < group->size(); ++i) {
    if (savepoints) RETURN_IF_ERROR(conn_->Exec("SAVEPOINT job"));
    if (firsts != nullptr && (*firsts)[i]) {
      conn_->Expect(std::move((*firsts)[i]->first), std::move((*firsts)[i]->second));
    }
    (*outcomes)[i] = ApplyJob((*group)[i].get(), conn_.get());
    if (conn_->ClearExpected() && (*outcomes)[i].ok()) {
      // Its first statement ran in the pipeline but Apply never asked for
      // it: its effects would commit unaccounted. Run the group again.
      (*outcomes)[i] = Status::IOError("the job's first statement was not its first");
    }
    // A lost connection is the transaction's, not the job's.
    if (!conn_->ok()) return (*outcomes)[i].ok() ? Status::IOError("unavailable") : (*outcomes)[i];
    if (!savepoints) {
      if ((*outcomes)[i].ok()) continue;
      *failed_job = true;
      return Status::Ok();
    }
    RETURN_IF_ERROR(
        conn_->Exec((*outcomes)[i].ok() ? "RELEASE SAVEPOINT job" : "ROLLBACK TO SAVEPOINT job"));
    if (!(*outcomes)[i].ok()) RETURN_IF_ERROR(conn_->Exec("RELEASE SAVEPOINT job"));
  }
  return Status::Ok();
}

// BEGIN, then every advisory lock the group's jobs will take, in one
// statement that takes them in the order of their lock ids (see
// PgJob::AddLockKeys): every node's writer takes them in one order, so two
// nodes' groups never wait on each other in a cycle, even for keys whose
// hashes collide (ordered by key, they could). Then the rows the jobs named
// (PgJob::AddRowLocks), in id order, for the same reason.
std::vector<PgStatement> PgWriter::Preamble(const Group& group) const {
  std::vector<PgStatement> statements;
  statements.push_back({"BEGIN", {}, /*prepare=*/false});
  std::vector<std::string> keys, ids, sessions;
  for (const auto& job : group) {
    job->AddLockKeys(&keys);
    job->AddRowLocks(&ids, &sessions);
  }
  if (!keys.empty()) statements.push_back({pgsql::kLockTenants, {TextArrayParam(keys)}});
  if (!ids.empty() || !sessions.empty()) {
    statements.push_back({pgsql::kLockRows, {TextArrayParam(ids), TextArrayParam(sessions)}});
  }
  return statements;
}

Status PgWriter::Begin(const Group& group, bool* lock_timeout) {
  *lock_timeout = false;
  std::vector<PgResult> results;
  Status s = conn_->RunPipeline(Preamble(group), &results);
  if (!s.ok() && conn_->ok() && s.IsBusy()) *lock_timeout = true;
  return s;
}

Status PgWriter::BeginPipelined(const Group& group, Firsts* firsts, bool* failed_job,
                                bool* lock_timeout) {
  *failed_job = false;
  *lock_timeout = false;
  firsts->clear();
  firsts->resize(group.size());
  std::vector<PgStatement> statements = Preamble(group);
  const size_t preamble = statements.size();
  std::vector<size_t> job_of;  // statement index - preamble -> job index
  for (size_t i = 0; i < group.size(); ++i) {
    std::optional<PgStatement> first = group[i]->First();
    if (!first) continue;
    statements.push_back(std::move(*first));
    job_of.push_back(i);
  }
  std::vector<PgResult> results;
  size_t failed = 0;
  Status s = conn_->RunPipeline(statements, &results, &failed);
  if (!s.ok()) {
    if (!conn_->ok()) return s;  // the connection: the group fails
    if (failed < preamble) {
      // BEGIN or a lock. A lock that timed out (Busy): another transaction
      // holds it, maybe a stalled node's; the caller sorts out whose jobs
      // needed it.
      if (s.IsBusy()) *lock_timeout = true;
      return s;
    }
    *failed_job = true;  // a job's statement: the jobs run again, one by one
    return Status::Ok();
  }
  for (size_t k = 0; k < job_of.size(); ++k) {
    (*firsts)[job_of[k]].emplace(std::move(statements[preamble + k]),
                                 std::move(results[preamble + k]));
  }
  return Status::Ok();
}

Status PgWriter::BeginWithoutWaiting(Group* group) {
  RETURN_IF_ERROR(conn_->Exec("BEGIN"));
  std::vector<std::string> keys;
  for (const auto& job : *group) job->AddLockKeys(&keys);
  if (keys.empty()) return Status::Ok();
  PgResult held;
  RETURN_IF_ERROR(conn_->Run(pgsql::kTryLockTenants, {TextArrayParam(keys)}, &held));
  std::set<std::string, std::less<>> not_had;
  for (int i = 0; i < held.rows(); ++i) not_had.insert(held.String(i, 0));
  if (not_had.empty()) return Status::Ok();
  Group rest;
  for (auto& job : *group) {
    std::vector<std::string> needs;
    job->AddLockKeys(&needs);
    const bool blocked = std::any_of(needs.begin(), needs.end(),
                                     [&](const std::string& k) { return not_had.count(k) > 0; });
    if (!blocked) {
      rest.push_back(std::move(job));
      continue;
    }
    stats_.jobs_failed.fetch_add(1, std::memory_order_relaxed);
    Answer(job.get(), Status::Busy("a tenant's lock is held by another transaction past "
                                   "lock_timeout; retry"));
  }
  group->swap(rest);
  return Status::Ok();
}

void PgWriter::CommitGroup(Group* group) {
  const auto fail_all = [&](const Status& s) {
    if (IsUnavailable(s)) stats_.failing.store(1, std::memory_order_relaxed);
    stats_.jobs_failed.fetch_add(group->size(), std::memory_order_relaxed);
    stats_.transactions_lost.fetch_add(1, std::memory_order_relaxed);
    for (auto& job : *group) Answer(job.get(), s);
    // No answer at all (a stalled path), or no connection to be had: what
    // is queued would wait a connect timeout more for the same answer.
    if (down() || IsNoAnswer(s)) {
      DropQueued(Status::IOError("unavailable: PostgreSQL cannot be reached from this node; not "
                                 "written"),
                 /*at_stop=*/false);
    }
  };
  const auto t0 = SteadyClock::now();
  std::vector<Status> outcomes;
  // Optimistic first: no savepoints (two round trips a job less). A job's
  // SQL error is rare (a stale token or a full pool is an answer, not an
  // error), and then the group runs again, each job under a savepoint.
  // BEGIN, the locks and each job's first statement go in one pipeline.
  bool failed_job = false, lock_timeout = false;
  Firsts firsts;
  Status s = EnsureConnected();
  if (s.ok()) s = BeginPipelined(*group, &firsts, &failed_job, &lock_timeout);
  if (s.ok() && !failed_job) {
    s = RunJobs(group, /*savepoints=*/false, &firsts, &outcomes, &failed_job);
  }
  if (s.ok() && failed_job) {
    stats_.groups_rerun.fetch_add(1, std::memory_order_relaxed);
    s = conn_->Exec("ROLLBACK");
    if (s.ok()) s = Begin(*group, &lock_timeout);
    if (s.ok()) s = RunJobs(group, /*savepoints=*/true, nullptr, &outcomes, &failed_job);
  }
  if (!s.ok() && lock_timeout) {
    // One tenant's lock (or a row) another transaction kept past
    // lock_timeout fails only the jobs that needed it.
    stats_.groups_rerun.fetch_add(1, std::memory_order_relaxed);
    s = conn_->Exec("ROLLBACK");
    if (s.ok()) s = BeginWithoutWaiting(group);
    if (s.ok()) s = RunJobs(group, /*savepoints=*/true, nullptr, &outcomes, &failed_job);
  }
  if (!s.ok()) {
    if (conn_ != nullptr && conn_->ok()) (void)conn_->Exec("ROLLBACK");
    return fail_all(s);
  }
  s = conn_->Exec("COMMIT");
  if (!s.ok()) {
    // A COMMIT that got no answer may have happened: say so.
    return fail_all(IsUnavailable(s) ? Status::IOError(std::string(kCommitOutcomeUnknown) +
                                                     s.message())
                                   : s);
  }
  stats_.failing.store(0, std::memory_order_relaxed);
  stats_.transactions.fetch_add(1, std::memory_order_relaxed);
  stats_.commit_micros_total.fetch_add(
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0).count()),
      std::memory_order_relaxed);
  for (size_t i = 0; i < group->size(); ++i) {
    (outcomes[i].ok() ? stats_.jobs_ok : stats_.jobs_failed)
        .fetch_add(1, std::memory_order_relaxed);
    Answer((*group)[i].get(), std::move(outcomes[i]));
  }
}

}  // namespace store
