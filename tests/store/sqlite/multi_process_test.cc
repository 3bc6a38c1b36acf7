// Several processes write the same file, each through its own Db and
// Transaction (flock on <db>.lock, then BEGIN IMMEDIATE): docs/design.md rule 4.
#include "store/sqlite/db.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Status;

constexpr int kProcesses = 4;
constexpr int kTransactionsEach = 250;

constexpr char kReadSql[] = "SELECT n FROM counter WHERE id = 1";
constexpr char kWriteSql[] = "UPDATE counter SET n = ?1 WHERE id = 1";

// Child exit codes.
constexpr int kOk = 0;
constexpr int kOpenFailed = 10;
constexpr int kBeginFailed = 11;
constexpr int kStatementFailed = 12;
constexpr int kCommitFailed = 13;
constexpr int kLockNotOurs = 14;

// One child: read-modify-write of the counter, kTransactionsEach times. The
// read and the write are separate statements, so only the transaction makes
// the increment safe; and inside it the lock file must name this process.
int IncrementMany(const std::string& path) {
  DbOptions options;
  options.sync = store::Sync::kNormal;  // the lock is under test, not fsync
  options.program = "counter-child";
  std::unique_ptr<Db> db;
  if (!Db::Open(path, options, &db).ok()) return kOpenFailed;
  const std::string me = "pid " + std::to_string(::getpid()) + " ";
  for (int i = 0; i < kTransactionsEach; ++i) {
    store::Transaction txn(db.get());
    if (!txn.Begin().ok()) return kBeginFailed;
    if (db->write_lock()->Holder().rfind(me, 0) != 0) return kLockNotOurs;
    int64_t n = 0;
    {
      Status s;
      store::StatementRef read;
      s = db->Cached(kReadSql, &read);
      bool row = false;
      if (!s.ok() || !read->Step(&row).ok() || !row) return kStatementFailed;
      n = read->ColumnInt64(0);
    }
    {
      Status s;
      store::StatementRef write;
      s = db->Cached(kWriteSql, &write);
      if (!s.ok()) return kStatementFailed;
      write->Bind(1, n + 1);
      if (!write->Run().ok()) return kStatementFailed;
    }
    if (!txn.Commit().ok()) return kCommitFailed;
  }
  return kOk;
}

}  // namespace

TEST_CASE("multi-process: every write transaction of several processes counts, none is lost") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  {
    std::unique_ptr<Db> db;
    REQUIRE(Db::Open(path, {}, &db).ok());
    REQUIRE(db->Exec("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); "
                     "INSERT INTO counter (id, n) VALUES (1, 0)")
                .ok());
  }  // closed before fork: no SQLite connection crosses it
  std::vector<std::unique_ptr<testing::Child>> children;
  for (int i = 0; i < kProcesses; ++i) {
    children.push_back(std::make_unique<testing::Child>([&] { return IncrementMany(path); }));
  }
  for (auto& child : children) CHECK(child->Wait() == kOk);

  std::unique_ptr<Db> db;
  REQUIRE(Db::Open(path, {}, &db).ok());
  store::Statement q;
  REQUIRE(db->Prepare("SELECT n FROM counter WHERE id = 1", &q).ok());
  bool row = false;
  REQUIRE(q.Step(&row).ok());
  REQUIRE(row);
  CHECK(q.ColumnInt64(0) == kProcesses * kTransactionsEach);
}
