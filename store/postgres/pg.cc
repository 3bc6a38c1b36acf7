#include "store/postgres/pg.h"

#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace store {

PgParam P(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return std::string(buf);
}

PgParam ArrayParam(const std::vector<PgParam>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    out.push_back('"');
    for (char c : *items[i]) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

PgResult::PgResult(pg_result* r) : r_(r) {}
PgResult::PgResult(PgResult&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = std::exchange(o.r_, nullptr);
  }
  return *this;
}
PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}
int PgResult::rows() const { return r_ == nullptr ? 0 : PQntuples(r_); }
int64_t PgResult::changed() const {
  const char* n = r_ == nullptr ? "" : PQcmdTuples(r_);
  return *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string_view PgResult::Text(int row, int col) const {
  return std::string_view(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}
int64_t PgResult::Int64(int row, int col) const {
  return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}

Status PgConn::Connect(const std::string& uri, const std::string& application_name,
                       std::unique_ptr<PgConn>* out) {
  std::unique_ptr<PgConn> conn(new PgConn(uri, application_name));
  RETURN_IF_ERROR(conn->Open());
  *out = std::move(conn);
  return Status::Ok();
}

PgConn::~PgConn() {
  if (conn_ != nullptr) PQfinish(conn_);
}

Status PgConn::Open() {
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
  const char* values[] = {application_name_.c_str(), "5", "5", "2", "3", "5000", uri_.c_str(),
                          nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) return Status::IOError("unavailable: out of memory connecting");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn_);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    return Status::IOError("unavailable: cannot connect to PostgreSQL: " + message);
  }
  // The schema's CREATE ... IF NOT EXISTS need not tell stderr each start.
  pg_result* quiet = PQexec(conn_, "SET client_min_messages = warning");
  if (quiet != nullptr) PQclear(quiet);
  // A primary only: on a read-only standby every write would fail.
  pg_result* r = PQexec(conn_, "SHOW transaction_read_only");
  const bool read_only = r != nullptr && PQresultStatus(r) == PGRES_TUPLES_OK &&
                         PQntuples(r) == 1 && std::string_view(PQgetvalue(r, 0, 0)) == "on";
  if (r != nullptr) PQclear(r);
  if (read_only) {
    PQfinish(conn_);
    conn_ = nullptr;
    return Status::IOError(
        "unavailable: the PostgreSQL server is read-only (a standby?); list the primary, or "
        "several hosts with target_session_attrs=read-write");
  }
  return Status::Ok();
}

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

Status PgConn::Exec(std::string_view sql) {
  if (!ok()) return Status::IOError("unavailable: the connection to PostgreSQL is lost");
  const std::string text(sql);
  pg_result* r = PQexec(conn_, text.c_str());
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  Status s = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? Status::Ok() : ErrorOf(r, text);
  if (r != nullptr) PQclear(r);
  return s;
}

Status PgConn::Run(const char* sql, const std::vector<PgParam>& params, PgResult* out) {
  if (!ok()) return Status::IOError("unavailable: the connection to PostgreSQL is lost");
  const std::string name = "s" + std::to_string(reinterpret_cast<uintptr_t>(sql));
  if (prepared_.count(sql) == 0) {
    pg_result* prep = PQprepare(conn_, name.c_str(), sql, static_cast<int>(params.size()), nullptr);
    const bool good = prep != nullptr && PQresultStatus(prep) == PGRES_COMMAND_OK;
    Status s = good ? Status::Ok() : ErrorOf(prep, "prepare");
    if (prep != nullptr) PQclear(prep);
    RETURN_IF_ERROR(s);
    prepared_.insert(sql);
  }
  std::vector<const char*> values(params.size());
  for (size_t i = 0; i < params.size(); ++i) values[i] = params[i] ? params[i]->c_str() : nullptr;
  pg_result* r = PQexecPrepared(conn_, name.c_str(), static_cast<int>(params.size()),
                                values.data(), nullptr, nullptr, /*resultFormat=*/0);
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

}  // namespace store
