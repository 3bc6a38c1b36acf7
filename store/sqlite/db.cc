#include "store/sqlite/db.h"

#include <sqlite3.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <utility>

#include "store/sqlite/wal_vfs.h"
#include "store/sqlite/write_lock.h"

namespace store {

Status StatusFromSqlite(int rc, std::string_view what, sqlite3* db) {
  std::string msg(what);
  msg += ": ";
  msg += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return Status::Ok();
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Busy(msg);
    case SQLITE_CONSTRAINT:
      return Status::Conflict(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(msg);
    case SQLITE_ERROR:
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
      return Status::InvalidArgument(msg);
    default:
      return Status::IOError(msg);
  }
}

// ---- Statement ----

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
void Statement::Bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
void Statement::Bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies, so the caller's buffer may die first.
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}
void Statement::BindNull(int index) { sqlite3_bind_null(stmt_, index); }
void Statement::BindColumnOf(int index, const Statement& from, int col) {
  sqlite3_bind_value(stmt_, index, sqlite3_column_value(from.stmt_, col));
}

Status Statement::Error(int rc) const {
  const char* sql = sqlite3_sql(stmt_);
  std::string what = "step of \"";
  what += sql != nullptr ? std::string_view(sql).substr(0, 60) : "?";
  what += "\"";
  return StatusFromSqlite(rc, what, db_);
}

Status Statement::Step(bool* has_row) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) {
    *has_row = true;
    return Status::Ok();
  }
  *has_row = false;
  if (rc == SQLITE_DONE) return Status::Ok();
  return Error(rc);
}

Status Statement::Run() {
  for (;;) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return Error(rc);
  }
}

int64_t Statement::ColumnInt64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::ColumnDouble(int col) const { return sqlite3_column_double(stmt_, col); }
std::string_view Statement::ColumnText(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(text),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}
bool Statement::ColumnIsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

void Statement::Reset() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

// ---- Db ----

namespace {

// What keeps this user from writing the database at `path`, and what to do,
// or "" when nothing can be named. SQLite says only "unable to open database
// file" or "attempt to write a readonly database"; it also creates `-wal`,
// `-shm` and our `.lock` beside the file, so its folder must be writable too.
std::string WhyNotWritable(const std::string& path) {
  const std::filesystem::path file(path);
  std::filesystem::path folder = file.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(folder, ec);
  const std::string user = "user " + std::to_string(::geteuid());
  if (status.type() == std::filesystem::file_type::not_found) {
    return "its folder " + folder.string() + " does not exist; create it (mkdir -p " +
           folder.string() + ") or give --db a path in a folder that does";
  }
  if (ec || !std::filesystem::is_directory(status)) {
    return folder.string() + " is not a folder this " + user + " can reach" +
           (ec ? " (" + ec.message() + ")" : "");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return "its folder " + folder.string() + " is not writable by this " + user +
           "; edgealloc creates " + file.filename().string() +
           "-wal, -shm and .lock beside the file: give that user the folder or choose another";
  }
  if (std::filesystem::exists(file, ec) && ::access(path.c_str(), R_OK | W_OK) != 0) {
    return "the file is not readable and writable by this " + user +
           "; give that user the file (and its -wal, -shm) or copy it elsewhere";
  }
  return "";
}

// edgealloc_took(container_id, generation, slot, data, closed): records its arguments in
// the connection's Took (its user data) and is true. Not deterministic, so
// SQLite calls it for each row it is reached for; DIRECTONLY, so no schema
// object (a trigger, a view) can call it.
void TookFunction(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  auto* took = static_cast<Took*>(sqlite3_user_data(ctx));
  took->any = true;
  const auto* id = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  took->container_id.assign(id ? id : "", static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  took->generation = sqlite3_value_int64(argv[1]);
  took->slot = sqlite3_value_int64(argv[2]);
  const auto* data = reinterpret_cast<const char*>(sqlite3_value_text(argv[3]));
  took->data.assign(data ? data : "", static_cast<size_t>(sqlite3_value_bytes(argv[3])));
  took->closed = sqlite3_value_int(argv[4]) != 0;
  sqlite3_result_int(ctx, 1);
}

// edgealloc_passed(container_id): records that a selector's walk passed
// the container's open attribute rows while it was not available
// (Took::passed), and is false. Not deterministic, DIRECTONLY, as above.
void PassedFunction(sqlite3_context* ctx, int /*argc*/, sqlite3_value** argv) {
  auto* took = static_cast<Took*>(sqlite3_user_data(ctx));
  const auto* id = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  took->passed.emplace_back(id ? id : "", static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  sqlite3_result_int(ctx, 0);
}

}  // namespace

Status Db::Open(const std::string& path, const DbOptions& options, std::unique_ptr<Db>* out) {
  Status s = OpenAsAsked(path, options, out);
  if (s.ok() || options.read_only) return s;
  const std::string why = WhyNotWritable(path);
  return why.empty() ? s : Status::IOError("cannot open the database " + path + ": " + why);
}

Status Db::OpenAsAsked(const std::string& path, const DbOptions& options,
                       std::unique_ptr<Db>* out) {
  // SQLite's allocation statistics take a global mutex on every malloc; we
  // never read them. Only possible before SQLite initializes, so once, first.
  static std::once_flag configured;
  std::call_once(configured, [] { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  std::unique_ptr<Db> db(new Db(path, options));
  // NOMUTEX: a Db belongs to one thread at a time, so SQLite's own mutex is waste.
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // The coalescing VFS only under FULL: it relies on the sync of each commit
  // (store/sqlite/wal_vfs.h). Readers never write the WAL and keep the default.
  const char* vfs = nullptr;
  if (!options.read_only && options.sync == Sync::kFull && options.coalesce_wal_writes) {
    RETURN_IF_ERROR(RegisterCoalescingWalVfs());
    vfs = kCoalescingWalVfs;
  }
  int rc = sqlite3_open_v2(path.c_str(), &db->db_, flags, vfs);
  if (rc != SQLITE_OK) {
    Status s = StatusFromSqlite(rc, "open " + path, db->db_);
    return s.ok() ? Status::IOError("open " + path) : s;
  }
  sqlite3_extended_result_codes(db->db_, 1);
  sqlite3_busy_timeout(db->db_, options.busy_timeout_ms);
  // SQLite opens a file it may only read read-only without a word, and a
  // file already in WAL mode takes the switch below without a write: the
  // first claim would be the first to fail.
  if (!options.read_only && sqlite3_db_readonly(db->db_, "main") == 1) {
    return Status::IOError("open " + path + ": SQLite could open it for reading only");
  }

  if (!options.read_only) {
    RETURN_IF_ERROR(WriteLock::Open(path + ".lock", options.program, &db->write_lock_));
    // journal_mode=WAL is persistent in the file and needs the lock to switch.
    // SQLite answers a switch it cannot make with the mode it kept, not an
    // error; every durability argument here assumes WAL, so anything else
    // is refused.
    {
      Statement wal;
      RETURN_IF_ERROR(db->Prepare("PRAGMA journal_mode=WAL", &wal));
      bool row = false;
      RETURN_IF_ERROR(wal.Step(&row));
      const std::string mode = row ? wal.ColumnString(0) : std::string();
      if (mode != "wal") {
        return Status::IOError(path + ": cannot switch to WAL mode (the journal mode is \"" +
                               mode + "\"); edgealloc needs WAL");
      }
    }
    RETURN_IF_ERROR(db->Exec(options.sync == Sync::kFull ? "PRAGMA synchronous=FULL"
                                                         : "PRAGMA synchronous=NORMAL"));
    // The writer's page cache: 64 MiB, where SQLite's default is 2 MiB. With
    // a million containers the claim's indexes and the attribute rows a
    // selector's claim and its release flip did not stay in 2 MiB, and every
    // miss was a read from the OS (bench/placement.sh: a two-key selector's
    // claims at 1,000,000 containers rose from 0.63 to 0.76 of 1-slot
    // fittest's, docs/performance.md). Pages are taken as they are used, so
    // a small file costs what it holds.
    RETURN_IF_ERROR(db->Exec("PRAGMA cache_size=-65536"));
    rc = sqlite3_create_function_v2(db->db_, "edgealloc_took", 5, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    &db->took_, TookFunction, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return StatusFromSqlite(rc, "register edgealloc_took", db->db_);
    rc = sqlite3_create_function_v2(db->db_, "edgealloc_passed", 1,
                                    SQLITE_UTF8 | SQLITE_DIRECTONLY, &db->took_, PassedFunction,
                                    nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return StatusFromSqlite(rc, "register edgealloc_passed", db->db_);
    // Every job of a group commit runs under a SAVEPOINT; its sub-journal
    // spills to a temp file past 64 KiB unless temp storage is memory, and
    // that file I/O made large groups slower than autocommit.
    RETURN_IF_ERROR(db->Exec("PRAGMA temp_store=MEMORY"));
  }
  // A cheap read that fails now, with a clear message, on a file that is not
  // a database, instead of on the first claim.
  RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON; SELECT count(*) FROM sqlite_schema"));
  *out = std::move(db);
  return Status::Ok();
}

Db::~Db() {
  cache_.clear();  // statements first: sqlite3_close refuses with live statements
  if (db_ != nullptr) sqlite3_close(db_);
}

Status Db::Exec(std::string_view sql) {
  std::string owned(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, owned.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = "exec \"" + owned.substr(0, 60) + "\"";
  Status s = StatusFromSqlite(rc, msg, db_);
  sqlite3_free(err);
  return s;
}

Status Db::Prepare(std::string_view sql, Statement* out) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return StatusFromSqlite(rc, "prepare \"" + std::string(sql.substr(0, 60)) + "\"", db_);
  }
  *out = Statement(db_, stmt);
  return Status::Ok();
}

Status Db::Cached(const char* sql, StatementRef* ref) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    auto stmt = std::make_unique<Statement>();
    RETURN_IF_ERROR(Prepare(sql, stmt.get()));
    it = cache_.emplace(sql, std::move(stmt)).first;
  }
  ref->s_ = it->second.get();
  return Status::Ok();
}

int64_t Db::Changes() const { return sqlite3_changes64(db_); }
bool Db::InAutocommit() const { return sqlite3_get_autocommit(db_) != 0; }

// ---- Transaction ----

Transaction::~Transaction() {
  if (active_) Rollback();
}

Status Transaction::Begin() {
  // REQUIRES: no transaction open on db_.
  WriteLock* lock = db_->write_lock();
  if (lock == nullptr) return Status::InvalidArgument("write transaction on a read-only Db");
  RETURN_IF_ERROR(lock->Acquire(db_->options().write_lock_timeout_ms));
  locked_ = true;
  Status st;
  StatementRef begin;
  st = db_->Cached("BEGIN IMMEDIATE", &begin);
  if (st.ok()) st = begin->Run();
  if (!st.ok()) {
    lock->Release();
    locked_ = false;
    return st;
  }
  active_ = true;
  return Status::Ok();
}

Status Transaction::Commit() {
  Status st;
  {
    StatementRef commit;
    st = db_->Cached("COMMIT", &commit);
    if (st.ok()) st = commit->Run();
  }
  if (!st.ok()) {
    Rollback();
    return st;
  }
  active_ = false;
  if (locked_) {
    db_->write_lock()->Release();
    locked_ = false;
  }
  return Status::Ok();
}

void Transaction::Rollback() {
  if (active_) {
    Status st;
    StatementRef rollback;
    st = db_->Cached("ROLLBACK", &rollback);
    if (st.ok()) (void)rollback->Run();  // fails only if SQLite already rolled back
    active_ = false;
  }
  if (locked_) {
    db_->write_lock()->Release();
    locked_ = false;
  }
}

}  // namespace store
