#include "store/postgres/pg_writer.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "store/postgres/clock_sql.h"
#include "store/group_writer_impl.h"
#include "store/postgres/lifecycle_sql.h"

namespace store {

template class GroupWriter<PgJob>;

namespace {

constexpr int64_t kMaxBackoffMs = 1000;

}  // namespace

PgWriter::PgWriter(std::string uri, std::string application_name, PgWriterOptions options)
    : GroupWriter(application_name, options),
      uri_(std::move(uri)),
      application_name_(std::move(application_name)),
      options_(std::move(options)) {}

PgWriter::~PgWriter() { Stop(); }

int64_t PgWriter::probe_interval_ms() const {
  // Down: try to connect again soon (EnsureConnected backs off).
  return down() ? std::min<int64_t>(options_.probe_interval_ms, 100) : options_.probe_interval_ms;
}

Status PgWriter::EnsureConnected() {
  if (conn_ != nullptr && conn_->ok()) return Status::Ok();
  stats_.connected.store(0, std::memory_order_relaxed);
  if (backoff_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms_));
  const bool again = conn_ != nullptr;
  Status s = again ? conn_->Reconnect()
                   : PgConn::Connect(uri_, application_name_, &conn_, options_.fence);
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
  set_down(!s.ok());
  if (s.ok()) {
    stats_.connected.store(1, std::memory_order_relaxed);
    if (again) stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats_.failing.store(1, std::memory_order_relaxed);
  }
  return s;
}

void PgWriter::NoteClockReading(const DbClockReading& reading) {
  if (!reading.trusted() && stats_.clock_offset_known.load(std::memory_order_relaxed) != 0) {
    return;
  }
  // The database read its clock somewhere in the round trip: its middle
  // is the best guess, wrong by half the round trip at most.
  const int64_t before = reading.wall_before_ms, after = reading.wall_after_ms;
  const int64_t offset = reading.db_ms - (before + after) / 2;
  stats_.clock_offset_ms.store(offset, std::memory_order_relaxed);
  stats_.clock_offset_error_ms.store((after - before + 1) / 2 + 2, std::memory_order_relaxed);
  stats_.clock_offset_known.store(1, std::memory_order_relaxed);
  const int64_t size = offset < 0 ? -offset : offset;
  if (options_.warn && !clock_warned_ && size > options_.max_clock_offset_ms) {
    clock_warned_ = true;
    options_.warn(application_name_ + ": this node's wall clock is " + std::to_string(-offset) +
                  " ms off the database's (beyond " +
                  std::to_string(options_.max_clock_offset_ms) +
                  " ms). Leases, idempotency and silence use the database's clock, so nothing "
                  "is decided wrongly; fix the node's time (NTP) so that its logs agree.");
  } else if (options_.warn && clock_warned_ && 2 * size <= options_.max_clock_offset_ms) {
    // Back within half the bound (2 * size: a bound of -1, beyond which
    // every offset is, never comes back; -1 / 2 would be 0).
    clock_warned_ = false;
    options_.warn(application_name_ + ": this node's wall clock is back within " +
                  std::to_string(size) + " ms of the database's");
  }
}

Status PgWriter::MeasureClock() {
  DbClockReading reading;
  RETURN_IF_ERROR(ReadDbClock(conn_.get(), &reading, options_.clock_steps != nullptr));
  NoteClockReading(reading);
  if (options_.clock_steps == nullptr || !reading.trusted()) return Status::Ok();
  // A step found while idle is shifted for now, so that no claim, renewal
  // or read waits for the next group or sweep to meet it.
  int64_t expected = 0;
  const int64_t shift = options_.clock_steps->Observe(reading, &expected);
  return shift == 0 ? Status::Ok() : ShiftForStep(expected, shift);
}

void PgWriter::Probe() {
  // A (re)connect measures the clock itself; an open connection is asked.
  const bool open = conn_ != nullptr && conn_->ok();
  Status s = EnsureConnected();
  if (s.ok() && open) s = MeasureClock();
  stats_.failing.store(s.ok() ? 0 : 1, std::memory_order_relaxed);
}

void PgWriter::AfterThrow() {
  conn_.reset();
  firsts_.clear();
  lock_timeout_ = false;
  stats_.connected.store(0, std::memory_order_relaxed);
}

Status PgWriter::Begin(std::span<PgJob*>* group, Run run, bool* again) {
  *again = false;
  lock_timeout_ = false;
  firsts_.clear();
  switch (run) {
    case Run::kFirst: {
      // Optimistic: no savepoints (two round trips a job less). A job's SQL
      // error is rare (a stale token or a full pool is an answer, not an
      // error), and then the group runs again, each job under a savepoint.
      RETURN_IF_ERROR(EnsureConnected());
      DbClockReading reading;
      int64_t expected = 0;
      RETURN_IF_ERROR(BeginPipelined(*group, again, &reading));
      if (*again) return Status::Ok();
      const int64_t shift = StepDue(reading, &expected);
      if (shift == 0) return Status::Ok();
      // A step no one has shifted for, found under the group's row locks:
      // shifted for alone (the shift locks every row), then the group anew.
      RETURN_IF_ERROR(conn_->Exec("ROLLBACK"));
      firsts_.clear();
      RETURN_IF_ERROR(ShiftForStep(expected, shift));
      RETURN_IF_ERROR(BeginPipelined(*group, again, &reading));
      return *again || StepDue(reading, &expected) == 0 ? Status::Ok() : StepStillDue();
    }
    case Run::kAgain: {
      RETURN_IF_ERROR(ShiftBeforeGroup());
      std::vector<PgResult> results;
      Status s = conn_->RunPipeline(Preamble(*group), &results);
      if (!s.ok() && conn_->ok() && s.IsBusy()) lock_timeout_ = true;
      return s;
    }
    case Run::kWithoutWaiting:
      RETURN_IF_ERROR(ShiftBeforeGroup());
      return BeginWithoutWaiting(group);
  }
  return Status::Ok();
}

// Every group looks at the database's clock before its jobs judge anything
// by it (a lease's end, a claim's or a renewal's new end, a silence): a
// step found there that no one has shifted for is shifted for first
// (db_clock.h), so no statement meets a stepped clock with rows on the
// clock before the step. A reading over a slow round trip cannot tell a
// step: the group goes on, and the next reading tells.
int64_t PgWriter::StepDue(const DbClockReading& reading, int64_t* expected_shifts) {
  if (options_.clock_steps == nullptr || !reading.trusted()) return 0;
  const int64_t before = stats_.clock_offset_ms.load(std::memory_order_relaxed);
  const int64_t now = reading.db_ms - (reading.wall_before_ms + reading.wall_after_ms) / 2;
  // The offset follows a step (of either clock) at once; small changes are
  // left to the idle probe's measure, whose round trip is shorter.
  if (now - before > kClockStepToleranceMs || before - now > kClockStepToleranceMs) {
    NoteClockReading(reading);
  }
  return options_.clock_steps->Observe(reading, expected_shifts);
}

Status PgWriter::StepStillDue() const {
  return Status::Busy("a step of the database's clock is being shifted for; retry shortly");
}

Status PgWriter::ShiftBeforeGroup() {
  if (options_.clock_steps == nullptr) return Status::Ok();
  DbClockReading reading;
  int64_t expected = 0;
  RETURN_IF_ERROR(ReadDbClock(conn_.get(), &reading));
  const int64_t shift = StepDue(reading, &expected);
  if (shift == 0) return Status::Ok();
  RETURN_IF_ERROR(ShiftForStep(expected, shift));
  RETURN_IF_ERROR(ReadDbClock(conn_.get(), &reading));
  return StepDue(reading, &expected) == 0 ? Status::Ok() : StepStillDue();
}

// In a transaction of its own, which holds nothing else: a shift locks
// every row (in id order), which a group holding some of its own could
// wait for in a cycle.
Status PgWriter::ShiftForStep(int64_t expected, int64_t shift) {
  RETURN_IF_ERROR(conn_->Exec("BEGIN"));
  Status s = ClaimClockShift(conn_.get(), expected, shift);
  if (!s.ok()) {
    (void)conn_->Exec("ROLLBACK");
    // Busy: another node claimed it first; the next reading counts it in.
    return s.IsBusy() ? Status::Ok() : s;
  }
  RETURN_IF_ERROR(conn_->Exec("COMMIT"));
  options_.clock_steps->Applied(expected, shift);
  return Status::Ok();
}

Status PgWriter::Savepoint() { return conn_->Exec("SAVEPOINT job"); }

Status PgWriter::EndSavepoint(bool undo) {
  if (undo) RETURN_IF_ERROR(conn_->Exec("ROLLBACK TO SAVEPOINT job"));
  return conn_->Exec("RELEASE SAVEPOINT job");
}

Status PgWriter::Apply(PgJob* job, size_t index) {
  if (index < firsts_.size() && firsts_[index]) {
    conn_->Expect(std::move(firsts_[index]->first), std::move(firsts_[index]->second));
  }
  return job->Apply(conn_.get());
}

void PgWriter::AfterApply(Status* outcome) {
  if (conn_->ClearExpected() && outcome->ok()) {
    // Its first statement ran in the pipeline but Apply never asked for
    // it: its effects would commit unaccounted. Run the group again.
    *outcome = Status::IOError("the job's first statement was not its first");
  }
}

Status PgWriter::Commit() {
  (void)conn_->TakeWarnings();  // the group's statements' own, if any
  Status s = conn_->Exec("COMMIT");
  if (s.ok()) {
    // A COMMIT whose wait for the synchronous standby was cancelled
    // (pg_cancel_backend, statement_timeout) returns success with only a
    // WARNING: committed here, maybe not on the standby, so a failover may
    // lose it. Not durable as promised: the outcome is unknown. The warning's
    // text is translated (lc_messages), so any warning COMMIT gives counts;
    // ours give none otherwise.
    const std::vector<std::string> warnings = conn_->TakeWarnings();
    if (warnings.empty()) return s;
    stats_.commits_not_replicated.fetch_add(1, std::memory_order_relaxed);
    return Status::IOError(std::string(kCommitOutcomeUnknown) +
                           "COMMIT succeeded with a warning, so it may not be replicated: " +
                           warnings.front());
  }
  if (!IsUnavailable(s)) return s;
  // A COMMIT that got no answer may have happened: say so.
  return Status::IOError(std::string(kCommitOutcomeUnknown) + s.message());
}

Status PgWriter::Rollback() {
  if (conn_ == nullptr || !conn_->ok()) return Status::IOError("unavailable: no connection");
  return conn_->Exec("ROLLBACK");
}

bool PgWriter::GroupLost(const Status& status) {
  if (IsUnavailable(status)) stats_.failing.store(1, std::memory_order_relaxed);
  // No answer at all (a stalled path), or no connection to be had: what is
  // queued would wait a connect timeout more for the same answer.
  return down() || IsNoAnswer(status);
}

// BEGIN, then every advisory lock the group's jobs will take, in one
// statement that takes them in the order of their lock ids (see
// PgJob::AddLockKeys): every node's writer takes them in one order, so two
// nodes' groups never wait on each other in a cycle, even for keys whose
// hashes collide (ordered by key, they could). Then the rows the jobs named
// (PgJob::AddRowLocks), in id order, for the same reason.
std::vector<PgStatement> PgWriter::Preamble(std::span<PgJob*> group) const {
  std::vector<PgStatement> statements;
  statements.push_back({"BEGIN", {}, /*prepare=*/false});
  std::vector<std::string> keys, ids, sessions;
  for (const PgJob* job : group) {
    job->AddLockKeys(&keys);
    job->AddRowLocks(&ids, &sessions);
  }
  if (!keys.empty()) statements.push_back({pgsql::kLockTenants, {TextArrayParam(keys)}});
  if (!ids.empty() || !sessions.empty()) {
    statements.push_back({pgsql::kLockRows, {TextArrayParam(ids), TextArrayParam(sessions)}});
  }
  return statements;
}

Status PgWriter::BeginPipelined(std::span<PgJob*> group, bool* failed_job,
                                DbClockReading* reading) {
  *failed_job = false;
  firsts_.resize(group.size());
  std::vector<PgStatement> statements = Preamble(group);
  // The database's clock, read right after BEGIN, in the same round trip.
  const bool read_clock = options_.clock_steps != nullptr;
  if (read_clock) {
    statements.insert(statements.begin() + 1, PgStatement{pgsql::kDbClockReading, {}});
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
  reading->wall_before_ms = base::NowMs();
  reading->monotonic_before_ms = base::SteadyNowMs();
  Status s = conn_->RunPipeline(statements, &results, &failed);
  reading->monotonic_after_ms = base::SteadyNowMs();
  reading->wall_after_ms = base::NowMs();
  if (s.ok() && read_clock) RETURN_IF_ERROR(TakeDbClockReading(results[1], reading));
  if (!s.ok()) {
    if (!conn_->ok()) return s;  // the connection: the group fails
    if (failed < preamble) {
      // BEGIN or a lock. A lock that timed out (Busy): another transaction
      // holds it, maybe a stalled node's; the caller sorts out whose jobs
      // needed it.
      if (s.IsBusy()) lock_timeout_ = true;
      return s;
    }
    *failed_job = true;  // a job's statement: the jobs run again, one by one
    return Status::Ok();
  }
  for (size_t k = 0; k < job_of.size(); ++k) {
    firsts_[job_of[k]].emplace(std::move(statements[preamble + k]),
                               std::move(results[preamble + k]));
  }
  return Status::Ok();
}

Status PgWriter::BeginWithoutWaiting(std::span<PgJob*>* group) {
  RETURN_IF_ERROR(conn_->Exec("BEGIN"));
  std::vector<std::string> keys;
  for (const PgJob* job : *group) job->AddLockKeys(&keys);
  if (keys.empty()) return Status::Ok();
  PgResult held;
  RETURN_IF_ERROR(conn_->Run(pgsql::kTryLockTenants, {TextArrayParam(keys)}, &held));
  std::set<std::string, std::less<>> not_had;
  for (int i = 0; i < held.rows(); ++i) not_had.insert(held.String(i, 0));
  if (not_had.empty()) return Status::Ok();
  size_t kept = 0;  // the jobs that go on, moved to the front in order
  for (PgJob* job : *group) {
    std::vector<std::string> needs;
    job->AddLockKeys(&needs);
    const bool blocked = std::any_of(needs.begin(), needs.end(),
                                     [&](const std::string& k) { return not_had.count(k) > 0; });
    if (!blocked) {
      (*group)[kept++] = job;
      continue;
    }
    Finish(job, Status::Busy("a lock it needs (its tenant's quota, its idempotency key) is "
                             "held by another transaction past lock_timeout; retry"));
  }
  *group = group->first(kept);
  return Status::Ok();
}

}  // namespace store
