// The SQLite Writer's own behaviour: SQLite's statement rollback, its own
// rollback after an I/O error, the shard's write lock, a savepoint a job
// broke. What every engine's writer does (group commit, failing and
// throwing jobs, refusal, Stop, RunSync) is in tests/store/writer_core_test.cc.
#include "store/sqlite/writer.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/sqlite/schema.h"
#include "tests/support/fn_job.h"
#include "tests/support/outcomes.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Status;
using store::Writer;
using store::WriterOptions;

using testing::FnJob;
using testing::Outcomes;

Status Insert(Db* db, const std::string& v) {
  return db->Exec("INSERT INTO t (v) VALUES ('" + v + "')");
}
std::function<Status(Db*)> InsertOf(const std::string& v) {
  return [v](Db* db) { return Insert(db, v); };
}

// A job of a group: its work, and WriteJob::needs_savepoint.
struct Job {
  std::function<Status(Db*)> apply;
  bool savepoint = true;
};

// A file with table t, migrated, and a started Writer on it.
struct Fixture {
  explicit Fixture(DbOptions db_options = {}) {
    path = dir.File("a.db");
    std::unique_ptr<Db> db;
    REQUIRE(Db::Open(path, db_options, &db).ok());
    REQUIRE(store::Migrate(db.get()).ok());
    REQUIRE(db->Exec("CREATE TABLE t (v TEXT PRIMARY KEY)").ok());
    DbOptions ro;
    ro.read_only = true;
    REQUIRE(Db::Open(path, ro, &reader).ok());
    writer = std::make_unique<Writer>(std::move(db), WriterOptions{});
    writer->Start();
  }
  ~Fixture() { writer.reset(); }

  // Runs `jobs` as one group: the writer is held until all are queued.
  // Returns their statuses, in order.
  std::vector<Status> RunAsOneGroup(const std::vector<Job>& jobs) {
    auto inside = std::make_shared<std::promise<void>>();
    std::promise<void> release;
    auto gate = release.get_future().share();
    REQUIRE(writer->Submit(std::make_unique<FnJob>(
        [inside, gate](Db*) {
          inside->set_value();
          gate.wait();
          return Status::Ok();
        },
        [](Status) {})));
    inside->get_future().wait();
    Outcomes out(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      REQUIRE(writer->Submit(
          std::make_unique<FnJob>(jobs[i].apply, out.For(i), /*solo=*/false, jobs[i].savepoint)));
    }
    release.set_value();
    out.Wait();
    return out.statuses;
  }

  // Whether a job writing `v` still commits (after a group that failed).
  bool WritesAgain(const std::string& v) { return writer->RunSync(InsertOf(v)).ok() && Visible(v); }

  bool Visible(const std::string& v) {
    store::StatementRef q;
    REQUIRE(reader->Cached("SELECT count(*) FROM t WHERE v = ?1", &q).ok());
    q->Bind(1, v);
    bool row = false;
    REQUIRE(q->Step(&row).ok());
    return q->ColumnInt64(0) == 1;
  }

  testing::TempDir dir;
  std::string path;
  std::unique_ptr<Db> reader;
  std::unique_ptr<Writer> writer;
};

}  // namespace

TEST_CASE("writer: a job that breaks a constraint fails alone with SQLite's message") {
  Fixture f;
  REQUIRE(f.writer->RunSync(InsertOf("dup")).ok());
  const std::vector<Status> out = f.RunAsOneGroup({
      {[](Db* db) {
        Status s = Insert(db, "x1");
        return s.ok() ? Insert(db, "dup") : s;
      }},
      {InsertOf("x2")},
  });
  CHECK(out[0].IsConflict());
  CHECK_THAT(out[0].message(), Catch::Contains("UNIQUE"));
  CHECK(out[1].ok());
  CHECK_FALSE(f.Visible("x1"));
  CHECK(f.Visible("x2"));
}

TEST_CASE("writer: a one-statement job without a savepoint fails alone by SQLite's statement rollback") {
  Fixture f;
  REQUIRE(f.writer->RunSync(InsertOf("dup")).ok());
  auto one_statement = [](std::string sql) {
    return Job{[sql](Db* db) { return db->Exec(sql); }, /*savepoint=*/false};
  };
  const std::vector<Status> out = f.RunAsOneGroup({
      one_statement("INSERT INTO t (v) VALUES ('y1')"),
      // One statement, two rows: the second breaks the unique key, so the
      // first must go too, though no savepoint was taken.
      one_statement("INSERT INTO t (v) VALUES ('y2'), ('dup')"),
      one_statement("INSERT INTO t (v) VALUES ('y3')"),
  });
  CHECK(out[0].ok());
  CHECK(out[1].IsConflict());
  CHECK(out[2].ok());
  CHECK(f.Visible("y1"));
  CHECK_FALSE(f.Visible("y2"));
  CHECK(f.Visible("y3"));
}

TEST_CASE("writer: when SQLite rolls the group's transaction back on its own, every job of the group fails") {
  Fixture f;
  std::atomic<bool> third_ran{false};
  const std::vector<Status> out = f.RunAsOneGroup({
      {InsertOf("z1"), /*savepoint=*/false},
      // Stands for an I/O error after which SQLite has rolled back by itself.
      {[](Db* db) {
         Status s = db->Exec("ROLLBACK");
         return s.ok() ? Status::IOError("disk I/O error") : s;
       },
       /*savepoint=*/false},
      {[&third_ran](Db* db) {
         third_ran = true;
         return Insert(db, "z3");
       },
       /*savepoint=*/false},
  });
  CHECK_FALSE(out[0].ok());  // its write went with the transaction
  CHECK(out[1].IsIOError());
  CHECK_FALSE(out[2].ok());
  CHECK_FALSE(third_ran.load());  // never run outside a transaction
  CHECK_FALSE(f.Visible("z1"));
  CHECK_FALSE(f.Visible("z3"));
  CHECK(f.writer->stats().transactions_lost.load() == 1);
  // The writer goes on with a fresh transaction.
  CHECK(f.WritesAgain("after"));
}

TEST_CASE("writer: when another process holds the write lock, the group fails Busy and writes nothing") {
  DbOptions options;
  options.write_lock_timeout_ms = 50;
  Fixture f(options);
  std::unique_ptr<Db> other;
  REQUIRE(Db::Open(f.path, {}, &other).ok());
  {
    store::Transaction held(other.get());
    REQUIRE(held.Begin().ok());
    Status s = f.writer->RunSync(InsertOf("blocked"));
    INFO(s.ToString());
    CHECK(s.IsBusy());
    CHECK_THAT(s.message(), Catch::Contains("held by pid"));
  }
  CHECK_FALSE(f.Visible("blocked"));
  CHECK(f.WritesAgain("later"));
}

// A failed job whose savepoint cannot be rolled back (here the job released
// it itself, so ROLLBACK TO finds none) would leave its changes in the
// group's transaction. Committing then writes what the job is told failed:
// the whole group fails instead, and every job hears it.
TEST_CASE("writer: a job whose savepoint cannot be rolled back fails its whole group") {
  Fixture f;
  const std::vector<Status> out = f.RunAsOneGroup({
      {InsertOf("a")},
      {[](Db* db) {
        Status s = Insert(db, "b");
        if (!s.ok()) return s;
        s = db->Exec("RELEASE job");  // b now belongs to the group's transaction
        if (!s.ok()) return s;
        return Status::Conflict("job b gives up");
      }},
      {InsertOf("c")},
  });
  CHECK_FALSE(f.Visible("b"));  // never committed while its job was told it failed
  CHECK_FALSE(out[1].ok());
  // The group failed whole: nothing of it is there, and no job was told Ok.
  CHECK_FALSE(f.Visible("a"));
  CHECK_FALSE(f.Visible("c"));
  CHECK_FALSE(out[0].ok());
  CHECK_FALSE(out[2].ok());
  CHECK(f.writer->stats().transactions_lost.load() == 1);
  // And the writer goes on.
  CHECK(f.WritesAgain("d"));
}

// A job without a savepoint that throws may have thrown after its one
// statement, which cannot be undone alone: its group fails whole, and the
// writer keeps serving.
TEST_CASE("writer: a job that throws without a savepoint fails its group, and the writer goes on") {
  Fixture f;
  const std::vector<Status> out = f.RunAsOneGroup({
      {InsertOf("a")},
      {[](Db* db) -> Status {
         (void)Insert(db, "b");  // its one statement ran
         throw std::runtime_error("boom after the statement");
       },
       /*savepoint=*/false},
  });
  CHECK_FALSE(out[0].ok());
  CHECK_FALSE(out[1].ok());
  CHECK_FALSE(f.Visible("a"));
  CHECK_FALSE(f.Visible("b"));
  CHECK(f.WritesAgain("z"));
}
