#include "store/postgres/pg_writer.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

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
    accepting_ = false;
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

bool PgWriter::Submit(std::unique_ptr<PgJob>&& job) {
  {
    base::MutexLock lock(&mu_);
    if (!accepting_ || static_cast<int>(queue_.size()) >= options_.max_queued_jobs) {
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
  for (;;) {
    std::deque<std::unique_ptr<PgJob>> group;
    {
      base::MutexLock lock(&mu_);
      while (queue_.empty() && !stop_) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and everything accepted is done
      // A solo job alone; otherwise up to max_group_jobs_ jobs, stopping
      // before a solo one.
      group.push_back(std::move(queue_.front()));
      queue_.pop_front();
      while (!group.front()->solo() && !queue_.empty() && !queue_.front()->solo() &&
             static_cast<int>(group.size()) < options_.max_group_jobs) {
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      stats_.queued.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
    }
    CommitGroup(&group);
  }
}

Status PgWriter::EnsureConnected() {
  if (conn_ != nullptr && conn_->ok()) return Status::Ok();
  stats_.connected.store(0, std::memory_order_relaxed);
  if (backoff_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms_));
  const bool again = conn_ != nullptr;
  Status s = again ? conn_->Reconnect() : PgConn::Connect(uri_, application_name_, &conn_);
  if (s.ok()) {
    s = conn_->Exec("SET lock_timeout = " + std::to_string(options_.lock_timeout_ms) +
                    "; SET idle_in_transaction_session_timeout = " +
                    std::to_string(options_.idle_in_transaction_timeout_ms));
  }
  backoff_ms_ = s.ok() ? 0 : std::clamp<int64_t>(backoff_ms_ * 2, 10, kMaxBackoffMs);
  if (s.ok()) {
    stats_.connected.store(1, std::memory_order_relaxed);
    if (again) stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
  }
  return s;
}

// Runs the group's jobs inside an open transaction. `savepoints`: each job
// under one of its own, so a failing job is undone alone and the rest go on;
// without, the first failing job stops the run (*failed_job, the transaction
// is then aborted). Returns a transaction-level error (the group fails
// whole), else Ok with each job's outcome in *outcomes.
Status PgWriter::RunJobs(std::deque<std::unique_ptr<PgJob>>* group, bool savepoints,
                         std::vector<std::optional<std::pair<PgStatement, PgResult>>>* firsts,
                         std::vector<Status>* outcomes, bool* failed_job) {
  *failed_job = false;
  for (size_t i = 0; i < group->size(); ++i) {
    if (savepoints) RETURN_IF_ERROR(conn_->Exec("SAVEPOINT job"));
    if (firsts != nullptr && (*firsts)[i]) {
      conn_->Expect(std::move((*firsts)[i]->first), std::move((*firsts)[i]->second));
    }
    (*outcomes)[i] = (*group)[i]->Apply(conn_.get());
    if (conn_->ClearExpected() && (*outcomes)[i].ok()) {
      // Its first statement ran in the pipeline but Apply never asked for
      // it: its effects would commit unaccounted. Run the group again.
      (*outcomes)[i] = Status::IOError("the job's first statement was not its first");
    }
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
// hashes collide (ordered by key, they could).
Status PgWriter::Begin(const std::deque<std::unique_ptr<PgJob>>& group) {
  RETURN_IF_ERROR(conn_->Exec("BEGIN"));
  std::vector<std::string> keys;
  for (const auto& job : group) job->AddLockKeys(&keys);
  if (keys.empty()) return Status::Ok();
  std::vector<PgParam> params;
  for (const std::string& key : keys) params.push_back(P(key));
  return conn_->Run(pgsql::kLockTenants, {ArrayParam(params)});
}

Status PgWriter::BeginPipelined(
    const std::deque<std::unique_ptr<PgJob>>& group,
    std::vector<std::optional<std::pair<PgStatement, PgResult>>>* firsts, bool* failed_job) {
  *failed_job = false;
  firsts->clear();
  firsts->resize(group.size());
  std::vector<PgStatement> statements;
  statements.push_back({"BEGIN", {}, /*prepare=*/false});
  std::vector<std::string> keys;
  for (const auto& job : group) job->AddLockKeys(&keys);
  if (!keys.empty()) {
    std::vector<PgParam> params;
    for (const std::string& key : keys) params.push_back(P(key));
    statements.push_back({pgsql::kLockTenants, {ArrayParam(params)}});
  }
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
    // BEGIN or a lock (a lock_timeout), or the connection: the group fails.
    if (!conn_->ok() || failed < preamble) return s;
    *failed_job = true;  // a job's statement: the jobs run again, one by one
    return Status::Ok();
  }
  for (size_t k = 0; k < job_of.size(); ++k) {
    (*firsts)[job_of[k]].emplace(std::move(statements[preamble + k]),
                                 std::move(results[preamble + k]));
  }
  return Status::Ok();
}

void PgWriter::CommitGroup(std::deque<std::unique_ptr<PgJob>>* group) {
  const auto fail_all = [&](const Status& s) {
    stats_.jobs_failed.fetch_add(group->size(), std::memory_order_relaxed);
    stats_.transactions_lost.fetch_add(1, std::memory_order_relaxed);
    for (auto& job : *group) job->Done(s);
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Status> outcomes(group->size());
  // Optimistic first: no savepoints (two round trips a job less). A job's
  // SQL error is rare (a stale token or a full pool is an answer, not an
  // error), and then the group runs again, each job under a savepoint.
  // BEGIN, the locks and each job's first statement go in one pipeline.
  bool failed_job = false;
  std::vector<std::optional<std::pair<PgStatement, PgResult>>> firsts;
  Status s = EnsureConnected();
  if (s.ok()) s = BeginPipelined(*group, &firsts, &failed_job);
  if (s.ok() && !failed_job) {
    s = RunJobs(group, /*savepoints=*/false, &firsts, &outcomes, &failed_job);
  }
  if (s.ok() && failed_job) {
    stats_.groups_rerun.fetch_add(1, std::memory_order_relaxed);
    s = conn_->Exec("ROLLBACK");
    if (s.ok()) s = Begin(*group);
    if (s.ok()) s = RunJobs(group, /*savepoints=*/true, nullptr, &outcomes, &failed_job);
  }
  if (!s.ok()) {
    if (conn_ != nullptr && conn_->ok()) (void)conn_->Exec("ROLLBACK");
    return fail_all(s);
  }
  s = conn_->Exec("COMMIT");
  if (!s.ok()) {
    // A COMMIT that got no answer may have happened: say so.
    return fail_all(s.message().find("unavailable") != std::string::npos
                        ? Status::IOError(std::string(kCommitOutcomeUnknown) + s.message())
                        : s);
  }
  stats_.transactions.fetch_add(1, std::memory_order_relaxed);
  stats_.commit_micros_total.fetch_add(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - t0)
                                .count()),
      std::memory_order_relaxed);
  for (size_t i = 0; i < group->size(); ++i) {
    (outcomes[i].ok() ? stats_.jobs_ok : stats_.jobs_failed)
        .fetch_add(1, std::memory_order_relaxed);
    (*group)[i]->Done(std::move(outcomes[i]));
  }
}

}  // namespace store
