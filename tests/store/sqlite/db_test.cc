#include "store/sqlite/db.h"

#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "base/clock.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Statement;
using store::StatementRef;
using store::Status;
using store::Transaction;

// Narrowing binds must not compile (db.h: deleted overloads).
template <typename T>
constexpr bool kCanBind = requires(Statement& s, T v) { s.Bind(1, v); };
static_assert(!kCanBind<bool>, "Bind(bool) must be a deleted overload");
static_assert(kCanBind<int64_t> && kCanBind<double> && kCanBind<std::string_view>);

using testing::OpenOrDie;

using testing::QueryInt;
using testing::QueryText;

constexpr char kSelectValuesSql[] = "SELECT v FROM t ORDER BY v";
constexpr char kSelectParamSql[] = "SELECT ?1";
constexpr char kBadSql[] = "SELEC 1";

}  // namespace

TEST_CASE("db: open switches a writable file to WAL and creates the -wal and .lock files") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto db = OpenOrDie(path);
  CHECK(QueryText(db.get(), "PRAGMA journal_mode") == "wal");
  CHECK(QueryInt(db.get(), "PRAGMA synchronous") == 2);  // FULL
  CHECK(std::filesystem::exists(path));
  CHECK(std::filesystem::exists(path + "-wal"));
  CHECK(std::filesystem::exists(path + ".lock"));
  REQUIRE(db->write_lock() != nullptr);
  CHECK_FALSE(db->write_lock()->held());
  CHECK(db->path() == path);
}

// Issue #11, defect 9: SQLite answers a journal_mode switch it cannot make
// with the old mode instead of an error. An in-memory database cannot be in
// WAL mode ("memory" comes back): the open must fail, not go on without WAL.
TEST_CASE("db: a file that cannot be switched to WAL is refused at open") {
  testing::TempDir dir;
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());  // where ":memory:.lock" goes
  std::unique_ptr<Db> db;
  DbOptions normal;
  normal.sync = store::Sync::kNormal;  // the default VFS
  Status s = Db::Open(":memory:", normal, &db);
  std::filesystem::current_path(before);
  INFO(s.ToString());
  CHECK(s.IsIOError());
  CHECK_THAT(s.message(), Catch::Contains("WAL"));
  CHECK(db == nullptr);
}

TEST_CASE("db: synchronous follows the Sync option") {
  testing::TempDir dir;
  DbOptions options;
  options.sync = store::Sync::kNormal;
  auto db = OpenOrDie(dir.File("a.db"), options);
  CHECK(QueryInt(db.get(), "PRAGMA synchronous") == 1);  // NORMAL
}

TEST_CASE("db: a read-only open of a missing file fails and leaves *db unset") {
  testing::TempDir dir;
  DbOptions options;
  options.read_only = true;
  std::unique_ptr<Db> db;
  Status s = Db::Open(dir.File("missing.db"), options, &db);
  CHECK_FALSE(s.ok());
  CHECK(db == nullptr);
  CHECK_FALSE(std::filesystem::exists(dir.File("missing.db")));
}

TEST_CASE("db: opening a file that is not a database fails with Corruption, not later") {
  testing::TempDir dir;
  const std::string path = dir.File("junk.db");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::string junk(4096, 'x');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  std::unique_ptr<Db> db;
  Status s = Db::Open(path, {}, &db);
  INFO(s.ToString());
  CHECK(s.IsCorruption());
  CHECK(db == nullptr);
}

TEST_CASE("db: a read-only Db cannot write and has no write lock") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto writer = OpenOrDie(path);
  REQUIRE(writer->Exec("CREATE TABLE t (v INTEGER)").ok());
  auto reader = testing::OpenReadOnlyOrDie(path);
  CHECK(reader->write_lock() == nullptr);
  CHECK_FALSE(reader->Exec("INSERT INTO t (v) VALUES (1)").ok());
  Transaction txn(reader.get());
  CHECK(txn.Begin().IsInvalidArgument());
  CHECK_FALSE(txn.active());
}

TEST_CASE("statement: binds and reads back int64, double, text and null") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(db->Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, n TEXT)").ok());
  const int64_t big = (int64_t{1} << 53) + 7;
  const std::string text("caf\xc3\xa9 \0 tail", 12);  // UTF-8 and an embedded NUL
  {
    Statement ins;
    REQUIRE(db->Prepare("INSERT INTO t (i, d, s, n) VALUES (?, ?, ?, ?)", &ins).ok());
    ins.Bind(1, big);
    ins.Bind(2, 3.25);
    ins.Bind(3, text);
    ins.BindNull(4);
    REQUIRE(ins.Run().ok());
    ins.Reset();
    ins.Bind(1, -42);
    ins.Bind(2, -0.5);
    {
      std::string temporary = "short-lived";
      ins.Bind(3, temporary);  // SQLite must copy: the buffer dies before the step
    }
    ins.Bind(4, "x");
    REQUIRE(ins.Run().ok());
    CHECK(db->Changes() == 1);
  }
  Statement q;
  REQUIRE(db->Prepare("SELECT i, d, s, n FROM t ORDER BY rowid", &q).ok());
  bool row = false;
  REQUIRE(q.Step(&row).ok());
  REQUIRE(row);
  CHECK(q.ColumnInt64(0) == big);
  CHECK(q.ColumnDouble(1) == 3.25);
  CHECK(q.ColumnString(2) == text);
  CHECK(q.ColumnText(2).size() == 12);
  CHECK(q.ColumnIsNull(3));
  CHECK(q.ColumnText(3).empty());
  CHECK_FALSE(q.ColumnIsNull(0));
  REQUIRE(q.Step(&row).ok());
  REQUIRE(row);
  CHECK(q.ColumnInt64(0) == -42);
  CHECK(q.ColumnDouble(1) == -0.5);
  CHECK(q.ColumnString(2) == "short-lived");
  CHECK(q.ColumnString(3) == "x");
  REQUIRE(q.Step(&row).ok());
  CHECK_FALSE(row);
}

TEST_CASE("statement: a prepare error carries SQLite's message") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  Statement q;
  Status s = db->Prepare("SELEC 1", &q);
  CHECK(s.IsInvalidArgument());
  CHECK_THAT(s.message(), Catch::Contains("near \"SELEC\": syntax error"));
  CHECK_FALSE(q.valid());

  s = db->Prepare("SELECT v FROM no_such_table", &q);
  CHECK_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("no such table: no_such_table"));
}

TEST_CASE("statement: a constraint violation is a Conflict with SQLite's message") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(db->Exec("CREATE TABLE t (v INTEGER PRIMARY KEY)").ok());
  REQUIRE(db->Exec("INSERT INTO t (v) VALUES (1)").ok());
  Statement ins;
  REQUIRE(db->Prepare("INSERT INTO t (v) VALUES (?)", &ins).ok());
  ins.Bind(1, 1);
  Status s = ins.Run();
  CHECK(s.IsConflict());
  CHECK_THAT(s.message(), Catch::Contains("UNIQUE constraint failed: t.v"));
}

TEST_CASE("cached: the same statement object comes back, with its bindings cleared") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  Statement* first = nullptr;
  {
    Status s;
    StatementRef q;
    s = db->Cached(kSelectParamSql, &q);
    REQUIRE(s.ok());
    first = &*q;
    q->Bind(1, 17);
    bool row = false;
    REQUIRE(q->Step(&row).ok());
    REQUIRE(row);
    CHECK(q->ColumnInt64(0) == 17);
  }
  Status s;
  StatementRef again;
  s = db->Cached(kSelectParamSql, &again);
  REQUIRE(s.ok());
  CHECK(&*again == first);
  bool row = false;
  REQUIRE(again->Step(&row).ok());  // ran from the start, not "done" from before
  REQUIRE(row);
  CHECK(again->ColumnIsNull(0));  // the 17 of the last use is gone
}

TEST_CASE("cached: a statement left on a row keeps no read open after its scope") {
  // A read left open in WAL mode pins the snapshot: a checkpoint by another
  // connection cannot copy frames written after it. After the StatementRef
  // is gone, a PASSIVE checkpoint must copy the whole WAL.
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto a = OpenOrDie(path);
  auto b = OpenOrDie(path);
  REQUIRE(a->Exec("CREATE TABLE t (v INTEGER); INSERT INTO t (v) VALUES (1), (2), (3)").ok());
  {
    Status s;
    StatementRef q;
    s = a->Cached(kSelectValuesSql, &q);
    REQUIRE(s.ok());
    bool row = false;
    REQUIRE(q->Step(&row).ok());
    REQUIRE(row);  // stopped on the first of three rows
    CHECK(q->ColumnInt64(0) == 1);
  }
  REQUIRE(b->Exec("INSERT INTO t (v) VALUES (4); INSERT INTO t (v) VALUES (5)").ok());
  Statement ckpt;
  REQUIRE(b->Prepare("PRAGMA wal_checkpoint(PASSIVE)", &ckpt).ok());
  bool row = false;
  REQUIRE(ckpt.Step(&row).ok());
  REQUIRE(row);
  const int64_t busy = ckpt.ColumnInt64(0), log = ckpt.ColumnInt64(1),
                done = ckpt.ColumnInt64(2);
  INFO("busy " << busy << " log " << log << " checkpointed " << done);
  CHECK(busy == 0);
  CHECK(log > 0);
  CHECK(done == log);
}

TEST_CASE("cached: a statement that failed to prepare reports its error on every use") {
  // Bug: Db::Cached caches the statement even when prepare failed, so the
  // second call says Ok and hands out an invalid statement.
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  {
    Status s;
    StatementRef q;
    s = db->Cached(kBadSql, &q);
    CHECK_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("syntax error"));
  }
  Status s;
  StatementRef q;
  s = db->Cached(kBadSql, &q);
  INFO("second Cached() of a bad statement: " << s.ToString());
  CHECK_FALSE(s.ok());
}

TEST_CASE("transaction: rolls back at scope exit unless committed, and frees the lock") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(db->Exec("CREATE TABLE t (v INTEGER)").ok());
  {
    Transaction txn(db.get());
    REQUIRE(txn.Begin().ok());
    CHECK(txn.active());
    CHECK(db->write_lock()->held());
    REQUIRE(db->Exec("INSERT INTO t (v) VALUES (1)").ok());
  }
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 0);
  CHECK_FALSE(db->write_lock()->held());
  {
    Transaction txn(db.get());
    REQUIRE(txn.Begin().ok());
    REQUIRE(db->Exec("INSERT INTO t (v) VALUES (2)").ok());
    REQUIRE(txn.Commit().ok());
    CHECK_FALSE(txn.active());
    CHECK_FALSE(db->write_lock()->held());
  }
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 1);
  {
    Transaction txn(db.get());
    REQUIRE(txn.Begin().ok());
    REQUIRE(db->Exec("INSERT INTO t (v) VALUES (3)").ok());
    txn.Rollback();
    CHECK_FALSE(txn.active());
    CHECK_FALSE(db->write_lock()->held());
  }
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 1);
  // And the connection is usable for the next transaction.
  Transaction txn(db.get());
  REQUIRE(txn.Begin().ok());
  REQUIRE(txn.Commit().ok());
}

TEST_CASE("transaction: another connection's write transaction makes Begin Busy, naming the holder") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  DbOptions holder_options;
  holder_options.program = "holder-prog";
  auto holder = OpenOrDie(path, holder_options);
  REQUIRE(holder->Exec("CREATE TABLE t (v INTEGER)").ok());
  DbOptions waiter_options;
  waiter_options.write_lock_timeout_ms = 50;
  waiter_options.busy_timeout_ms = 50;
  auto waiter = OpenOrDie(path, waiter_options);

  Transaction held(holder.get());
  REQUIRE(held.Begin().ok());
  REQUIRE(holder->Exec("INSERT INTO t (v) VALUES (1)").ok());

  Transaction txn(waiter.get());
  Status s = txn.Begin();
  INFO(s.ToString());
  CHECK(s.IsBusy());
  CHECK_THAT(s.message(), Catch::Contains("pid " + std::to_string(::getpid())));
  CHECK_THAT(s.message(), Catch::Contains("program holder-prog"));
  CHECK_FALSE(txn.active());
  CHECK_FALSE(waiter->write_lock()->held());

  REQUIRE(held.Commit().ok());
  Transaction after(waiter.get());
  REQUIRE(after.Begin().ok());
  REQUIRE(waiter->Exec("INSERT INTO t (v) VALUES (2)").ok());
  REQUIRE(after.Commit().ok());
  CHECK(QueryInt(waiter.get(), "SELECT count(*) FROM t") == 2);
}

TEST_CASE("transaction: a SQLite-level writer that bypasses the flock makes Begin Busy and drops the flock") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  DbOptions options;
  options.busy_timeout_ms = 50;
  auto db = OpenOrDie(path, options);
  REQUIRE(db->Exec("CREATE TABLE t (v INTEGER)").ok());

  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "BEGIN IMMEDIATE; INSERT INTO t (v) VALUES (1)", nullptr, nullptr,
                       nullptr) == SQLITE_OK);

  {
    Transaction txn(db.get());
    Status s = txn.Begin();
    INFO(s.ToString());
    CHECK(s.IsBusy());
    CHECK_FALSE(txn.active());
    CHECK_FALSE(db->write_lock()->held());  // not left holding the flock
  }
  Status s = db->Exec("INSERT INTO t (v) VALUES (2)");
  CHECK(s.IsBusy());
  CHECK_THAT(s.message(), Catch::Contains("locked"));

  REQUIRE(sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
  Transaction txn(db.get());
  REQUIRE(txn.Begin().ok());
  REQUIRE(txn.Commit().ok());
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 1);
}

TEST_CASE("db: NowMs is wall-clock milliseconds") {
  const int64_t now = base::NowMs();
  CHECK(now > 1600000000000);  // after 2020
  CHECK(now < 4102444800000);  // before 2100
}
