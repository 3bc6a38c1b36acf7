#include "store/sqlite/wal_vfs.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "store/sqlite/db.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Status;
using store::Transaction;
using testing::OpenOrDie;
using testing::QueryInt;

// The Db at `path` with the table t of blobs every case writes.
std::unique_ptr<Db> OpenWithBlobTable(const std::string& path, DbOptions options = {}) {
  auto db = OpenOrDie(path, options);
  REQUIRE(db->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)").ok());
  return db;
}

// Waits for a forked child; the test fails unless it exited with 0.
void RequireCleanExit(pid_t child) {
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

// Forks a child that, from folder `dir`, commits `commits` transactions of
// `rows` rows of `bytes` random bytes each to the Db at `uri`, then exits
// with no close and no checkpoint: as if killed right after its last
// acknowledgement. Its exit code says where it failed; 0: all committed.
pid_t ForkCommitter(const std::string& dir, const std::string& uri, int commits, int rows,
                    int bytes) {
  const pid_t child = fork();
  if (child != 0) return child;
  if (chdir(dir.c_str()) != 0) _exit(2);
  std::unique_ptr<Db> db;
  if (!Db::Open(uri, {}, &db).ok()) _exit(3);
  const std::string insert = "INSERT INTO t (b) VALUES (randomblob(" + std::to_string(bytes) + "))";
  for (int i = 0; i < commits; ++i) {
    Transaction txn(db.get());
    if (!txn.Begin().ok()) _exit(4);
    for (int r = 0; r < rows; ++r) {
      if (!db->Exec(insert).ok()) _exit(5);
    }
    if (!txn.Commit().ok()) _exit(6);
  }
  _exit(0);
}

// Inserts `rows` rows of `bytes` random bytes each in one write transaction.
void InsertBlobs(Db* db, int rows, int bytes) {
  Transaction txn(db);
  REQUIRE(txn.Begin().ok());
  for (int i = 0; i < rows; ++i) {
    REQUIRE(db->Exec("INSERT INTO t (b) VALUES (randomblob(" + std::to_string(bytes) + "))").ok());
  }
  REQUIRE(txn.Commit().ok());
}

// What the coalescing VFS counted while `work` ran.
store::CoalescingWalStats CountedDuring(const std::function<void()>& work) {
  const auto before = store::GetCoalescingWalStats();
  work();
  const auto after = store::GetCoalescingWalStats();
  return {after.writes - before.writes, after.flushes - before.flushes};
}

// At least 100 frame writes, gathered into a tenth as many pwrites or fewer.
void CheckGathered(const store::CoalescingWalStats& counted) {
  const uint64_t writes = counted.writes;
  const uint64_t flushes = counted.flushes;
  INFO("writes " << writes << " flushes " << flushes);
  CHECK(writes >= 100);
  CHECK(flushes * 10 <= writes);
}

// A connection through SQLite's default VFS, as another process would read.
int64_t CountWithDefaultVfs(const std::string& path) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw, "SELECT count(*) FROM t", -1, &q, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(q) == SQLITE_ROW);
  int64_t n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return n;
}

TEST_CASE("wal_vfs: a commit's frames reach the WAL in a few writes, not two a frame") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto db = OpenWithBlobTable(path);  // Sync::kFull by default
  // About 50 pages, so about 100 frame writes.
  CheckGathered(CountedDuring([&] { InsertBlobs(db.get(), 200, 1000); }));
  CHECK(CountWithDefaultVfs(path) == 200);
}

TEST_CASE("wal_vfs: a commit of megabytes goes out in pieces the unix VFS can write") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = OpenWithBlobTable(path);
    InsertBlobs(db.get(), 80, 64 * 1024);  // about 5 MiB: past the 4 MiB buffer too
    CHECK(QueryInt(db.get(), "SELECT sum(length(b)) FROM t") == 80 * 64 * 1024);
    REQUIRE(db->Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  }
  auto db = OpenOrDie(path);
  CHECK(testing::QueryText(db.get(), "PRAGMA integrity_check") == "ok");
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 80);
  CHECK(QueryInt(db.get(), "SELECT sum(length(b)) FROM t") == 80 * 64 * 1024);
}

TEST_CASE("wal_vfs: every commit is visible to another connection as soon as it returns") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto db = OpenWithBlobTable(path);
  auto reader = testing::OpenReadOnlyOrDie(path);
  for (int i = 1; i <= 40; ++i) {
    InsertBlobs(db.get(), 3, 3000);
    REQUIRE(QueryInt(reader.get(), "SELECT count(*) FROM t") == 3 * i);
  }
}

TEST_CASE("wal_vfs: under synchronous=NORMAL the writes go straight through") {
  testing::TempDir dir;
  DbOptions normal;
  normal.sync = store::Sync::kNormal;
  auto db = OpenWithBlobTable(dir.File("a.db"), normal);
  const auto before = store::GetCoalescingWalStats();
  InsertBlobs(db.get(), 50, 1000);
  CHECK(store::GetCoalescingWalStats().writes == before.writes);
}

TEST_CASE("wal_vfs: what a killed process committed is there when the file is opened again") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  OpenWithBlobTable(path);
  const pid_t child = ForkCommitter(dir.path(), path, 30, 20, 2000);
  REQUIRE(child >= 0);
  RequireCleanExit(child);
  auto db = OpenOrDie(path);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 600);
  CHECK(testing::QueryText(db.get(), "PRAGMA integrity_check") == "ok");
}

}  // namespace

namespace {

// Issue #11, defect 2: a transaction that spills pages to the WAL and then
// rolls back must leave nothing of itself to be written later, when another
// connection has committed frames at those offsets.
TEST_CASE("wal_vfs: a rolled-back transaction's spilled frames are never written later") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto a = OpenWithBlobTable(path);
  InsertBlobs(a.get(), 5, 100);
  // Everything committed is in the main file, so the rollback below reads
  // pages back from there, not from the WAL (a WAL read would flush).
  REQUIRE(a->Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  // A tiny page cache, so that a large transaction spills frames to the WAL
  // before its end; appending rows never reads the spilled pages back.
  REQUIRE(a->Exec("PRAGMA cache_size = 4").ok());
  {
    Transaction txn(a.get());
    REQUIRE(txn.Begin().ok());
    for (int i = 0; i < 200; ++i) {
      REQUIRE(a->Exec("INSERT INTO t (b) VALUES (zeroblob(3000))").ok());
    }
    txn.Rollback();
  }
  // Another connection (as another process would) commits at the same WAL
  // offsets: a's rollback left the WAL's end where it was.
  auto b = OpenOrDie(path);
  for (int i = 0; i < 20; ++i) InsertBlobs(b.get(), 10, 3000);
  // a reads, syncs and closes: nothing of its rolled-back transaction may
  // reach the file now.
  CHECK(QueryInt(a.get(), "SELECT count(*) FROM t") == 205);
  REQUIRE(a->Exec("PRAGMA wal_checkpoint(PASSIVE)").ok());
  a.reset();
  CHECK(CountWithDefaultVfs(path) == 205);
  CHECK(testing::QueryText(b.get(), "PRAGMA integrity_check") == "ok");
  b.reset();
  auto again = OpenOrDie(path);
  CHECK(testing::QueryText(again.get(), "PRAGMA integrity_check") == "ok");
  CHECK(QueryInt(again.get(), "SELECT count(*) FROM t") == 205);
  CHECK(QueryInt(again.get(), "SELECT count(*) FROM t WHERE length(b) = 3000") == 200);
}

}  // namespace

namespace {

// Runs the calling scope in `dir`, so that a relative "file:" URI (and the
// "<path>.lock" Db::Open makes of it) lands there; back where it was at exit.
class InDir {
 public:
  explicit InDir(const std::string& dir) : before_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDir() { std::filesystem::current_path(before_); }
  InDir(const InDir&) = delete;
  InDir& operator=(const InDir&) = delete;

 private:
  std::filesystem::path before_;
};

// The probe: with powersafe overwrite off (?psow=0, or a device that
// does not claim it) SQLite pads each commit to a sector boundary by writing
// its last frame again; the copy that straddles the boundary is written in
// two parts, the first, then the sync, then the rest. The rest is part of
// the WAL (the next commit's frames follow it, and recovery stops at the
// first frame that does not check out), so it must reach the file though
// no sync of this transaction follows it.
constexpr char kNoPsowUri[] = "file:a.db?psow=0";
constexpr int kProbeCommits = 20;

void CommitOneRowEach(Db* db, int commits) {
  for (int i = 0; i < commits; ++i) {
    Transaction txn(db);
    REQUIRE(txn.Begin().ok());
    REQUIRE(db->Exec("INSERT INTO t (b) VALUES (randomblob(300))").ok());
    REQUIRE(txn.Commit().ok());
  }
}

TEST_CASE("wal_vfs: with psow=0 what a killed process committed is there when opened again") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  OpenWithBlobTable(path);
  const pid_t child = ForkCommitter(dir.path(), kNoPsowUri, kProbeCommits, 1, 300);
  REQUIRE(child >= 0);
  RequireCleanExit(child);
  auto db = OpenOrDie(path);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == kProbeCommits);
  CHECK(testing::QueryText(db.get(), "PRAGMA integrity_check") == "ok");
}

TEST_CASE("wal_vfs: with psow=0 commits survive a close and are in order for a reader") {
  testing::TempDir dir;
  InDir in(dir.path());
  {
    auto db = OpenWithBlobTable(kNoPsowUri);
    CommitOneRowEach(db.get(), kProbeCommits);
    // Another connection, through the default VFS, sees them all now.
    CHECK(CountWithDefaultVfs("a.db") == kProbeCommits);
  }  // close: checkpoint, WAL deleted
  auto db = OpenOrDie(kNoPsowUri);
  CHECK(testing::QueryText(db.get(), "PRAGMA integrity_check") == "ok");
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == kProbeCommits);
  // And on into a WAL that already holds the padded commits.
  CommitOneRowEach(db.get(), kProbeCommits);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM t") == 2 * kProbeCommits);
}

}  // namespace

namespace {

// The rest of what the VFS relies on is refused where it would be lost: a
// pragma on a connection through it, with the reason in the error.
TEST_CASE("wal_vfs: synchronous below FULL is refused on a coalescing connection, naming why") {
  testing::TempDir dir;
  auto db = OpenWithBlobTable(dir.File("a.db"));
  for (const char* value : {"NORMAL", "normal", "OFF", "0", "1", "on", "yes", "9"}) {
    INFO(value);
    Status s = db->Exec(std::string("PRAGMA synchronous=") + value);
    INFO(s.ToString());
    CHECK_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("synchronous below FULL"));
    CHECK_THAT(s.message(), Catch::Contains(store::kCoalescingWalVfs));
    CHECK(QueryInt(db.get(), "PRAGMA synchronous") == 2);  // still FULL
  }
  // What keeps the precondition is let through, and so are queries.
  for (const char* value : {"FULL", "2", "EXTRA", "3"}) {
    INFO(value);
    CHECK(db->Exec(std::string("PRAGMA synchronous=") + value).ok());
  }
  CHECK(QueryInt(db.get(), "PRAGMA synchronous") == 3);  // EXTRA
  CHECK(db->Exec("PRAGMA main.synchronous=FULL").ok());
  CHECK_FALSE(db->Exec("PRAGMA main.synchronous=NORMAL").ok());
  InsertBlobs(db.get(), 3, 100);
  CHECK(CountWithDefaultVfs(dir.File("a.db")) == 3);
  // The default VFS (Sync::kNormal) takes any level.
  DbOptions normal;
  normal.sync = store::Sync::kNormal;
  auto other = OpenOrDie(dir.File("b.db"), normal);
  CHECK(other->Exec("PRAGMA synchronous=OFF").ok());
}

TEST_CASE("wal_vfs: locking_mode=EXCLUSIVE is refused on a coalescing connection, naming why") {
  testing::TempDir dir;
  auto db = OpenWithBlobTable(dir.File("a.db"));
  Status s = db->Exec("PRAGMA locking_mode=EXCLUSIVE");
  INFO(s.ToString());
  CHECK_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("locking_mode=EXCLUSIVE"));
  CHECK_THAT(s.message(), Catch::Contains(store::kCoalescingWalVfs));
  CHECK(testing::QueryText(db.get(), "PRAGMA locking_mode") == "normal");
  CHECK(db->Exec("PRAGMA locking_mode=NORMAL").ok());
  InsertBlobs(db.get(), 3, 100);
  CHECK(CountWithDefaultVfs(dir.File("a.db")) == 3);  // not locked out
}

}  // namespace

namespace {

// Writing through after a sync must not cost the gathering where a later sync
// of the same transaction follows: the first commit into a restarted WAL
// (whose header SQLite syncs on its own first), and the frames of a commit
// padded with psow=0 up to its sector boundary.
TEST_CASE("wal_vfs: a restarted WAL and a psow=0 commit are still written in a few pwrites") {
  testing::TempDir dir;
  InDir in(dir.path());
  const char* uri = GENERATE(as<const char*>{}, "a.db", "file:a.db?psow=0");
  INFO(uri);
  auto db = OpenWithBlobTable(uri);
  InsertBlobs(db.get(), 5, 100);
  REQUIRE(db->Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());  // the next commit restarts the WAL
  CheckGathered(CountedDuring([&] { InsertBlobs(db.get(), 200, 1000); }));
  CHECK(CountWithDefaultVfs("a.db") == 205);
}

}  // namespace
