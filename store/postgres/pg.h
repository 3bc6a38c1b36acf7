#ifndef EDGEALLOC_STORE_POSTGRES_PG_H_
#define EDGEALLOC_STORE_POSTGRES_PG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "store/postgres/pg_values.h"
#include "store/status.h"

struct pg_conn;
struct pg_result;

namespace store {

class PgFence;

// A statement and its parameters, to be run later (PgConn::RunPipeline).
// `sql` is a `constexpr char k...[]` (prepared, keyed by its pointer), or
// with `prepare` false a text sent as it is (BEGIN).
struct PgStatement {
  const char* sql = nullptr;
  std::vector<PgParam> params;
  bool prepare = true;
};

// A PgConn is one libpq connection and its prepared statements. It belongs
// to one thread at a time and is not locked. Statements are prepared on
// first use, keyed by the pointer of their text (pass a `constexpr char
// k...[]`, as for SQLite's Db::Cached), and prepared again after a
// reconnect.
//
// Errors map to Status by SQLSTATE: unique_violation is Conflict;
// serialization_failure, deadlock_detected and lock timeouts are Busy (retry);
// a lost or refused connection is IOError with "unavailable" in its message
// (the server answers 503 and the next use reconnects); anything else is
// IOError.
class PgConn {
 public:
  // Connects to `uri` (anything libpq accepts, several hosts included) and
  // makes sure the session is read-write. `application_name` shows in
  // pg_stat_activity. With a `fence`, every connect and reconnect also
  // refuses an old primary (store/postgres/fence.h: IOError "unavailable:
  // fenced: ..."), and then tries the other hosts `uri` lists, one by one.
  static Status Connect(const std::string& uri, const std::string& application_name,
                        std::unique_ptr<PgConn>* out, std::shared_ptr<PgFence> fence = nullptr);
  // Connects to a server whatever its role, a standby too, without a fence:
  // for reading, never writing (PgFence::Learn).
  static Status ConnectAny(const std::string& uri, const std::string& application_name,
                           std::unique_ptr<PgConn>* out);
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;
  ~PgConn();

  // Runs one or more statements without parameters (schema, BEGIN, COMMIT).
  Status Exec(std::string_view sql);
  // Runs the prepared statement `sql` with `params`; *out gets its rows.
  // If it is the statement Expect() was given (same text, same
  // parameters) and the first Run since, the result given there is
  // returned without a round trip.
  Status Run(const char* sql, const std::vector<PgParam>& params, PgResult* out = nullptr);

  // Sends `statements` at once in libpq's pipeline mode and reads their
  // results (*results, one a statement): one round trip for them all. They
  // run in order; after a failing one the rest are skipped (the open
  // transaction is then aborted) and its error is returned, with its index
  // in *failed. A lost connection is IOError "unavailable", *failed unset.
  Status RunPipeline(const std::vector<PgStatement>& statements, std::vector<PgResult>* results,
                     size_t* failed = nullptr);
  // The next Run of `statement` answers `result` (the statement already
  // ran, in a pipeline). Cleared by that Run, or by ClearExpected.
  void Expect(PgStatement statement, PgResult result);
  // True if an Expect()ed statement was never Run: then its effects are in
  // the transaction without its caller knowing, which must be rolled back.
  bool ClearExpected();
  // True while the connection is usable; false after it broke.
  bool ok() const;
  // Reconnects after a break (prepared statements are made again on use).
  Status Reconnect();
  // The WARNINGs the server sent since the last call (their primary text),
  // and forgets them. A COMMIT whose wait for a synchronous standby was
  // cancelled says so only by a WARNING, and succeeds (PgWriter::Commit).
  std::vector<std::string> TakeWarnings();
  // The longest any one answer is waited for, client side (0: no bound).
  // Past it the connection is closed and the call fails "unavailable": a
  // link that stalls without closing (a frozen proxy, a half-dead network)
  // acknowledges what is sent and answers nothing, and neither TCP's
  // timeouts nor the server's statement_timeout would ever end the wait.
  void set_io_timeout_ms(int64_t ms) { io_timeout_ms_ = ms; }

 private:
  PgConn(std::string uri, std::string application_name, std::shared_ptr<PgFence> fence)
      : uri_(std::move(uri)),
        application_name_(std::move(application_name)),
        fence_(std::move(fence)) {}
  // Connects to uri_; if the fence refused the primary libpq chose, tries
  // each listed host alone.
  Status Open();
  // One connect to `conninfo` and its checks: a primary (unless
  // !primary_only_), admitted by the fence.
  Status OpenAt(const std::string& conninfo);
  // Closes a connection a check of OpenAt refused, and returns `why`.
  Status Refuse(Status why);
  // libpq's notice receiver: keeps WARNINGs (TakeWarnings), and prints every
  // notice to stderr as libpq's default does.
  static void OnNotice(void* self, const pg_result* r);
  Status ErrorOf(pg_result* r, std::string_view what) const;
  Status Prepare(const char* sql, int n_params);
  // PQgetResult, waiting at most io_timeout_ms for it; on timeout breaks the
  // connection and sets *timed_out (returns null).
  pg_result* GetResult(bool* timed_out);
  // The results of the command just sent, the last one kept (PQexec's way);
  // null with *timed_out if an answer did not come in time.
  pg_result* LastResult(bool* timed_out);
  Status TimedOut(std::string_view what);
  // Closes the connection (ok() is then false, the next use reconnects):
  // after a pipeline that went wrong midway, its state is not to be trusted.
  void Break();

  std::string uri_;
  std::string application_name_;
  std::shared_ptr<PgFence> fence_;
  bool primary_only_ = true;
  pg_conn* conn_ = nullptr;
  std::unordered_set<const char*> prepared_;
  std::optional<PgStatement> expected_;
  PgResult expected_result_;
  bool expected_missed_ = false;  // another statement ran first
  std::vector<std::string> warnings_;
  int64_t io_timeout_ms_ = kDefaultIoTimeoutMs;

 public:
  // Until set_io_timeout_ms: long enough for any statement of ours.
  static constexpr int64_t kDefaultIoTimeoutMs = 10000;
};

// In the message of a call whose answer did not come within the io timeout.
inline constexpr char kNoAnswer[] = "no answer from PostgreSQL within";

// Whether `s` says the database could not be reached: a lost or refused
// connection ("unavailable", the 503 a client gets), or no answer at all.
inline bool IsUnavailable(const Status& s) {
  return s.message().find("unavailable") != std::string::npos;
}
inline bool IsNoAnswer(const Status& s) {
  return s.message().find(kNoAnswer) != std::string::npos;
}

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_PG_H_
