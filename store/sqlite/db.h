#ifndef EDGEALLOC_STORE_SQLITE_DB_H_
#define EDGEALLOC_STORE_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/sqlite/write_lock.h"
#include "store/status.h"
#include "store/types.h"

struct sqlite3;
struct sqlite3_stmt;

namespace store {

struct DbOptions {
  bool read_only = false;
  // SQLite's `synchronous` in WAL mode: kFull fsyncs the WAL on every
  // commit; kNormal only at checkpoints.
  Sync sync = Sync::kFull;
  // SQLite's own wait for its file locks; the cross-process WriteLock is
  // waited for separately, with backoff, by Transaction::Begin.
  int busy_timeout_ms = 5000;
  // How long a write transaction waits for the cross-process write lock.
  int write_lock_timeout_ms = 10000;
  // Written into <db>.lock so that a waiter can say who holds it.
  std::string program = "edgealloc";
  // A writable Db with Sync::kFull writes each WAL commit with one pwrite
  // (store/sqlite/wal_vfs.h); off only to measure what that buys.
  bool coalesce_wal_writes = true;
};

// What the last claim statement took (store/sqlite/claim_sql.h): SQLite
// writes it through the SQL function edgealloc_took while the statement
// runs, on the Db's thread, in place of a RETURNING clause (which costs the
// statement a temporary table and a statement journal each run). Valid only
// if that statement changed a row.
struct Took {
  bool any = false;
  std::string container_id;
  int64_t generation = 0;
  int64_t slot = 0;
  std::string data;  // the container's
  // A selector's claim took the last free slot of its container: its
  // attribute rows are open no more (store/sqlite/selector_sql.h,
  // kCloseAttributes).
  bool closed = false;
  // Containers a selector's walk passed whose attribute rows said open
  // while they were not available (edgealloc_passed): the job makes their
  // rows right after the claim (kSyncAttributesOpen), so that no walk
  // passes them again. Cleared with `any` before each claim.
  std::vector<std::string> passed;
};

// A Statement is one prepared SQLite statement. It is owned by one thread at a
// time, like the Db it came from. Bind indexes are 1-based, columns 0-based.
// Narrowing or surprising binds (bool, a char pointer taken as bool) are
// deleted overloads, so they do not compile.
class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  bool valid() const { return stmt_ != nullptr; }

  void Bind(int index, int64_t value);
  void Bind(int index, int value) { Bind(index, static_cast<int64_t>(value)); }
  void Bind(int index, double value);
  void Bind(int index, std::string_view value);
  void Bind(int index, const char* value) { Bind(index, std::string_view(value)); }
  void Bind(int index, const std::string& value) { Bind(index, std::string_view(value)); }
  void Bind(int index, bool value) = delete;
  void BindNull(int index);
  // Binds column `col` of `from`'s current row as it is (type and NULL
  // included); SQLite copies it, so `from` may be reset afterwards.
  void BindColumnOf(int index, const Statement& from, int col);

  // Advances one row. Sets *has_row and returns Ok on SQLITE_ROW (true) or
  // SQLITE_DONE (false); any other result is an error with SQLite's message.
  Status Step(bool* has_row);
  // Steps until done, ignoring rows. Ok, or the error with SQLite's message.
  Status Run();

  int64_t ColumnInt64(int col) const;
  double ColumnDouble(int col) const;
  // The view is valid until the next Step or Reset.
  std::string_view ColumnText(int col) const;
  std::string ColumnString(int col) const { return std::string(ColumnText(col)); }
  bool ColumnIsNull(int col) const;

  // Makes the statement ready to run again and clears its bindings, so that a
  // cached statement never carries values or an open read into its next use.
  void Reset();

 private:
  Status Error(int rc) const;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// A borrowed cached statement (Db::Cached) that is reset when it goes out of
// scope, so a statement stepped to a row never keeps a read transaction open
// past its use. Empty until Db::Cached fills it.
class StatementRef {
 public:
  StatementRef() = default;
  StatementRef(const StatementRef&) = delete;
  StatementRef& operator=(const StatementRef&) = delete;
  ~StatementRef() {
    if (s_ != nullptr) s_->Reset();
  }
  Statement* operator->() { return s_; }
  Statement& operator*() { return *s_; }

 private:
  friend class Db;
  Statement* s_ = nullptr;
};

// A Db is one SQLite connection (WAL, busy_timeout, synchronous) and its cache
// of prepared statements. It belongs to one thread at a time and is not
// locked. A writable Db also owns the cross-process write lock of its file,
// which Transaction takes around every write transaction.
class Db {
 public:
  // Opens (creating if writable) the database at `path`. A writable one is
  // switched to WAL and gets its `<path>.lock`. Returns IOError or Corruption
  // with SQLite's message on failure, and for a writable one that cannot be
  // written, what is in the way (a missing folder, a read-only file or
  // folder) and what to do; *db is set only on success.
  static Status Open(const std::string& path, const DbOptions& options, std::unique_ptr<Db>* db);

  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  // Runs one or more statements with no parameters (schema, pragmas).
  Status Exec(std::string_view sql);
  // Prepares a fresh statement owned by the caller.
  Status Prepare(std::string_view sql, Statement* out);
  // Points *ref at the cached statement for `sql`, prepared on first use,
  // reset and ready to bind; *ref resets it again at scope exit. The cache is
  // keyed by the pointer, so pass a `static constexpr char k...[]`. Returns
  // the prepare error (not cached: every use reports it), *ref then empty.
  // REQUIRES: *ref is empty.
  Status Cached(const char* sql, StatementRef* ref);

  int64_t Changes() const;
  // True when no transaction is open, e.g. after SQLite rolled one back on
  // its own (I/O error, full disk, out of memory).
  bool InAutocommit() const;
  const std::string& path() const { return path_; }
  const DbOptions& options() const { return options_; }
  bool read_only() const { return options_.read_only; }
  // The cross-process write lock; null for a read-only Db.
  WriteLock* write_lock() { return write_lock_.get(); }
  sqlite3* raw() { return db_; }
  // Cleared by the claim before its statement runs, read after (Took).
  Took& took() { return took_; }

 private:
  // Open without explaining a failure.
  static Status OpenAsAsked(const std::string& path, const DbOptions& options,
                            std::unique_ptr<Db>* db);
  Db(std::string path, DbOptions options) : path_(std::move(path)), options_(std::move(options)) {}
  std::string path_;
  DbOptions options_;
  sqlite3* db_ = nullptr;
  std::unique_ptr<WriteLock> write_lock_;
  std::unordered_map<const char*, std::unique_ptr<Statement>> cache_;
  Took took_;
};

// A Transaction is one write transaction: the cross-process write lock, then
// BEGIN IMMEDIATE. It rolls back at scope exit unless Commit() returned Ok, and
// releases the lock either way. One per Db at a time, on the Db's thread.
class Transaction {
 public:
  explicit Transaction(Db* db) : db_(db) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Takes the write lock (bounded wait with backoff; Busy naming the holder on
  // timeout) and begins. Returns Busy, IOError or Ok.
  Status Begin();
  // Commits and releases the lock. On failure the transaction is rolled back.
  Status Commit();
  void Rollback();
  bool active() const { return active_; }

 private:
  Db* db_;
  bool active_ = false;
  bool locked_ = false;
};

// Maps an SQLite result code and message to a Status.
Status StatusFromSqlite(int rc, std::string_view what, sqlite3* db);


}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_DB_H_
