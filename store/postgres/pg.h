#ifndef EDGEALLOC_STORE_POSTGRES_PG_H_
#define EDGEALLOC_STORE_POSTGRES_PG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "store/status.h"

struct pg_conn;
struct pg_result;

namespace store {

// One parameter of a statement, sent as text; nullopt is SQL NULL.
using PgParam = std::optional<std::string>;

// The rows a statement returned, freed with it. Columns are read as text
// (the statements ask for text results). Owned by one thread at a time.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* r);
  PgResult(PgResult&&) noexcept;
  PgResult& operator=(PgResult&&) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  // Rows an INSERT, UPDATE or DELETE changed.
  int64_t changed() const;
  bool IsNull(int row, int col) const;
  std::string_view Text(int row, int col) const;
  std::string String(int row, int col) const { return std::string(Text(row, col)); }
  int64_t Int64(int row, int col) const;

 private:
  pg_result* r_ = nullptr;
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
  // pg_stat_activity.
  static Status Connect(const std::string& uri, const std::string& application_name,
                        std::unique_ptr<PgConn>* out);
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;
  ~PgConn();

  // Runs one or more statements without parameters (schema, BEGIN, COMMIT).
  Status Exec(std::string_view sql);
  // Runs the prepared statement `sql` with `params`; *out gets its rows.
  Status Run(const char* sql, const std::vector<PgParam>& params, PgResult* out = nullptr);
  // True while the connection is usable; false after it broke.
  bool ok() const;
  // Reconnects after a break (prepared statements are made again on use).
  Status Reconnect();

 private:
  PgConn(std::string uri, std::string application_name)
      : uri_(std::move(uri)), application_name_(std::move(application_name)) {}
  Status Open();
  Status ErrorOf(pg_result* r, std::string_view what) const;

  std::string uri_;
  std::string application_name_;
  pg_conn* conn_ = nullptr;
  std::unordered_set<const char*> prepared_;
};

// The text of an int64, for a parameter.
inline PgParam P(int64_t v) { return std::to_string(v); }
inline PgParam P(std::string_view v) { return std::string(v); }
inline PgParam P(const char* v) { return std::string(v); }
PgParam P(double v);
// A text[]-style array literal of `items` (NULL elements for nullopt), for
// one parameter that carries a whole batch (unnest).
PgParam ArrayParam(const std::vector<PgParam>& items);
inline PgParam Null() { return std::nullopt; }

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_PG_H_
