#include "store/postgres/pg.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "store/postgres/fence.h"

namespace store {

Status PgConn::Connect(const std::string& uri, const std::string& application_name,
                       std::unique_ptr<PgConn>* out, std::shared_ptr<PgFence> fence) {
  std::unique_ptr<PgConn> conn(new PgConn(uri, application_name, std::move(fence)));
  RETURN_IF_ERROR(conn->Open());
  *out = std::move(conn);
  return Status::Ok();
}

Status PgConn::ConnectAny(const std::string& uri, const std::string& application_name,
                          std::unique_ptr<PgConn>* out) {
  std::unique_ptr<PgConn> conn(new PgConn(uri, application_name, nullptr));
  conn->primary_only_ = false;
  RETURN_IF_ERROR(conn->Open());
  *out = std::move(conn);
  return Status::Ok();
}

PgConn::~PgConn() {
  if (conn_ != nullptr) PQfinish(conn_);
}

Status PgConn::Open() {
  Status s = OpenAt(uri_);
  if (!IsFenced(s)) return s;
  // libpq took the first listed host that is a primary, and it is an old
  // one: the promoted primary may be listed after it.
  const std::vector<std::string> hosts = SingleHostConninfos(uri_);
  if (hosts.size() < 2) return s;
  for (const std::string& host : hosts) {
    if (OpenAt(host).ok()) return Status::Ok();
  }
  return s;
}

Status PgConn::Refuse(Status why) {
  PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
  return why;
}

Status PgConn::OpenAt(const std::string& conninfo) {
  if (conn_ != nullptr) PQfinish(conn_);
  prepared_.clear();
  // connect_timeout bounds a dead host; the keepalives notice a peer that
  // vanished mid-run instead of waiting on it for the kernel's two hours.
  // Defaults first, so that the URI's own settings (expanded from dbname,
  // last) win. tcp_user_timeout: a write the peer never acknowledges fails
  // in 5 s instead of hanging the writer and every claim queued behind it.
  const char* keys[] = {"application_name",    "connect_timeout",  "keepalives_idle",
                        "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                        "dbname",              nullptr};
  const char* values[] = {application_name_.c_str(), "5", "5", "2", "3", "5000", conninfo.c_str(),
                          nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) return Status::IOError("unavailable: out of memory connecting");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn_);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    return Status::IOError("unavailable: cannot connect to PostgreSQL: " + message);
  }
  warnings_.clear();
  PQsetNoticeReceiver(conn_, &PgConn::OnNotice, this);
  // The schema's CREATE ... IF NOT EXISTS need not tell stderr each start.
  bool timed_out = false;
  if (PQsendQuery(conn_, "SET client_min_messages = warning") == 1) {
    if (pg_result* quiet = LastResult(&timed_out); quiet != nullptr) PQclear(quiet);
  }
  if (timed_out) return TimedOut("connect");
  if (!primary_only_) return Status::Ok();
  // A primary only: on a read-only standby every write would fail.
  pg_result* r = PQsendQuery(conn_, "SHOW transaction_read_only") == 1 ? LastResult(&timed_out)
                                                                       : nullptr;
  if (timed_out) return TimedOut("connect");
  const bool read_only = r != nullptr && PQresultStatus(r) == PGRES_TUPLES_OK &&
                         PQntuples(r) == 1 && std::string_view(PQgetvalue(r, 0, 0)) == "on";
  if (r != nullptr) PQclear(r);
  if (read_only) {
    return Refuse(Status::IOError(
        "unavailable: the PostgreSQL server is read-only (a standby?); list the primary, or "
        "several hosts with target_session_attrs=read-write"));
  }
  if (fence_ == nullptr) return Status::Ok();
  const std::string where = std::string(PQhost(conn_)) + ":" + PQport(conn_);
  Status fenced = CheckFence(this, fence_.get(), where);
  return fenced.ok() ? fenced : Refuse(std::move(fenced));
}

void PgConn::OnNotice(void* self, const pg_result* r) {
  const char* text = PQresultErrorMessage(r);
  if (text != nullptr) std::fputs(text, stderr);
  // Not localized (lc_messages translates the rest): the severity to test.
  const char* severity = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (severity == nullptr || std::string_view(severity) != "WARNING") return;
  const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  // Bounded: a session that warns on every statement never drains them.
  auto& warnings = static_cast<PgConn*>(self)->warnings_;
  if (warnings.size() < 16) warnings.emplace_back(primary != nullptr ? primary : "a warning");
}

std::vector<std::string> PgConn::TakeWarnings() { return std::exchange(warnings_, {}); }

bool PgConn::ok() const { return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK; }

Status PgConn::Reconnect() { return Open(); }

Status PgConn::ErrorOf(pg_result* r, std::string_view what) const {
  std::string message = r != nullptr ? PQresultErrorMessage(r) : "";
  if (message.empty()) message = PQerrorMessage(conn_);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state != nullptr ? state : "";
  const std::string text = std::string(what) + ": " + message;
  if (PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 ||
      sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03") {
    return Status::IOError("unavailable: " + text);
  }
  if (sqlstate == "23505") return Status::Conflict(text);
  if (sqlstate == "40001" || sqlstate == "40P01" || sqlstate == "55P03") return Status::Busy(text);
  return Status::IOError(text);
}

pg_result* PgConn::GetResult(bool* timed_out) {
  *timed_out = false;
  if (io_timeout_ms_ > 0) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(io_timeout_ms_);
    while (PQisBusy(conn_) == 1) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        *timed_out = true;
        Break();
        return nullptr;
      }
      pollfd p{PQsocket(conn_), POLLIN, 0};
      const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (n < 0 && errno != EINTR) break;  // PQgetResult reports the broken socket
      if (n > 0 && PQconsumeInput(conn_) == 0) break;  // the same
    }
  }
  return PQgetResult(conn_);
}

pg_result* PgConn::LastResult(bool* timed_out) {
  pg_result* last = nullptr;
  for (;;) {
    pg_result* r = GetResult(timed_out);
    if (*timed_out) {
      if (last != nullptr) PQclear(last);
      return nullptr;
    }
    if (r == nullptr) return last;
    // As PQexec: an error is kept over what follows it.
    if (last != nullptr) {
      const ExecStatusType st = PQresultStatus(last);
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        PQclear(r);
        continue;
      }
      PQclear(last);
    }
    last = r;
  }
}

Status PgConn::TimedOut(std::string_view what) {
  return Status::IOError(std::string("unavailable: ") + kNoAnswer + " " +
                         std::to_string(io_timeout_ms_) + " ms (" + std::string(what) +
                         "); the connection was closed");
}

// A statement as an error message names it: its start, on one line. A whole
// schema's text in a message buried the one line that said what was wrong.
namespace {
std::string StatementForMessage(std::string_view sql) {
  constexpr size_t kShown = 60;
  std::string out;
  for (char c : sql) {
    if (out.size() >= kShown) return out + "...";
    const bool space = c == '\n' || c == '\t' || c == ' ';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}
}  // namespace

Status PgConn::Exec(std::string_view sql) {
  if (!ok()) return Status::IOError("unavailable: the connection to PostgreSQL is lost");
  const std::string text(sql);
  bool timed_out = false;
  pg_result* r = PQsendQuery(conn_, text.c_str()) == 1 ? LastResult(&timed_out) : nullptr;
  if (timed_out) return TimedOut(StatementForMessage(text));
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  Status s = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
                 ? Status::Ok()
                 : ErrorOf(r, StatementForMessage(text));
  if (r != nullptr) PQclear(r);
  return s;
}

std::string StatementName(const char* sql) {
  return "s" + std::to_string(reinterpret_cast<uintptr_t>(sql));
}

Status PgConn::Prepare(const char* sql, int n_params) {
  if (prepared_.count(sql) > 0) return Status::Ok();
  bool timed_out = false;
  pg_result* prep = PQsendPrepare(conn_, StatementName(sql).c_str(), sql, n_params, nullptr) == 1
                        ? LastResult(&timed_out)
                        : nullptr;
  if (timed_out) return TimedOut("prepare");
  const bool good = prep != nullptr && PQresultStatus(prep) == PGRES_COMMAND_OK;
  Status s = good ? Status::Ok() : ErrorOf(prep, "prepare");
  if (prep != nullptr) PQclear(prep);
  RETURN_IF_ERROR(s);
  prepared_.insert(sql);
  return Status::Ok();
}

void PgConn::Break() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
  ClearExpected();
}

void PgConn::Expect(PgStatement statement, PgResult result) {
  expected_missed_ = false;
  expected_ = std::move(statement);
  expected_result_ = std::move(result);
}

bool PgConn::ClearExpected() {
  const bool pending = expected_.has_value();
  expected_.reset();
  expected_missed_ = false;
  expected_result_ = PgResult();
  return pending;
}

Status PgConn::Run(const char* sql, const std::vector<PgParam>& params, PgResult* out) {
  if (expected_ && !expected_missed_) {
    if (expected_->sql == sql && expected_->params == params) {
      if (out != nullptr) *out = std::move(expected_result_);
      ClearExpected();
      return Status::Ok();
    }
    // It ran before this one, out of its caller's order: never hand it out.
    expected_missed_ = true;
  }
  if (!ok()) return Status::IOError("unavailable: the connection to PostgreSQL is lost");
  const std::string name = StatementName(sql);
  RETURN_IF_ERROR(Prepare(sql, static_cast<int>(params.size())));
  std::vector<const char*> values(params.size());
  for (size_t i = 0; i < params.size(); ++i) values[i] = params[i] ? params[i]->c_str() : nullptr;
  bool timed_out = false;
  pg_result* r = PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(params.size()),
                                     values.data(), nullptr, nullptr, /*resultFormat=*/0) == 1
                     ? LastResult(&timed_out)
                     : nullptr;
  if (timed_out) return TimedOut("statement");
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    Status s = ErrorOf(r, "statement");
    if (r != nullptr) PQclear(r);
    return s;
  }
  if (out != nullptr) {
    *out = PgResult(r);
  } else {
    PQclear(r);
  }
  return Status::Ok();
}

Status PgConn::RunPipeline(const std::vector<PgStatement>& statements,
                           std::vector<PgResult>* results, size_t* failed) {
  results->clear();
  if (!ok()) return Status::IOError("unavailable: the connection to PostgreSQL is lost");
  for (const PgStatement& st : statements) {
    if (st.prepare) RETURN_IF_ERROR(Prepare(st.sql, static_cast<int>(st.params.size())));
  }
  if (PQenterPipelineMode(conn_) != 1) return ErrorOf(nullptr, "pipeline mode");
  const auto lost = [&](std::string_view what) {
    Status s = ErrorOf(nullptr, what);
    Break();
    return IsUnavailable(s) ? s : Status::IOError("unavailable: " + s.message());
  };
  for (const PgStatement& st : statements) {
    std::vector<const char*> values(st.params.size());
    for (size_t i = 0; i < st.params.size(); ++i) {
      values[i] = st.params[i] ? st.params[i]->c_str() : nullptr;
    }
    const int n = static_cast<int>(st.params.size());
    const int sent =
        st.prepare ? PQsendQueryPrepared(conn_, StatementName(st.sql).c_str(), n, values.data(),
                                         nullptr, nullptr, 0)
                   : PQsendQueryParams(conn_, st.sql, n, nullptr, values.data(), nullptr, nullptr, 0);
    if (sent != 1) return lost("pipeline send");
  }
  if (PQpipelineSync(conn_) != 1) return lost("pipeline sync");
  Status first_error = Status::Ok();
  bool timed_out = false;
  for (size_t i = 0; i < statements.size(); ++i) {
    pg_result* r = GetResult(&timed_out);
    if (timed_out) return TimedOut("pipeline");
    if (r == nullptr) return lost("pipeline result");
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
      results->emplace_back(r);
    } else {
      if (first_error.ok() && st != PGRES_PIPELINE_ABORTED) {
        first_error = ErrorOf(r, "statement");
        if (failed != nullptr) *failed = i;
      }
      PQclear(r);
      results->emplace_back();
    }
    // Each statement's results end with a null.
    pg_result* end = GetResult(&timed_out);
    if (timed_out) return TimedOut("pipeline");
    if (end != nullptr) {
      PQclear(end);
      return lost("pipeline: more results than statements");
    }
  }
  pg_result* sync = GetResult(&timed_out);
  if (timed_out) return TimedOut("pipeline end");
  const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  if (sync != nullptr) PQclear(sync);
  if (!synced || PQexitPipelineMode(conn_) != 1) return lost("pipeline end");
  if (!first_error.ok()) results->clear();
  return first_error;
}

}  // namespace store
