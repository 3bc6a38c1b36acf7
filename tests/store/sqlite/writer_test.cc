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

  // Queues a job; `savepoint`: WriteJob::needs_savepoint.
  void Submit(std::function<Status(Db*)> apply, std::function<void(Status)> done,
              bool savepoint = true) {
    REQUIRE(writer->Submit(
        std::make_unique<FnJob>(std::move(apply), std::move(done), /*solo=*/false, savepoint)));
  }

  // Submits a job that holds the writer thread until Unblock(), and waits
  // until the writer is inside it: what is submitted next queues up.
  void Block() {
    auto inside = std::make_shared<std::promise<void>>();
    auto entered = inside->get_future();
    release = std::promise<void>();
    auto gate = release.get_future().share();
    Submit(
        [inside, gate](Db*) {
          inside->set_value();
          gate.wait();
          return Status::Ok();
        },
        [](Status) {});
    entered.wait();
  }
  // Lets the blocked writer go on and waits for every job of `out`.
  void UnblockAndWait(Outcomes* out) {
    release.set_value();
    out->Wait();
  }

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
  std::promise<void> release;
};

}  // namespace

TEST_CASE("writer: a job that breaks a constraint fails alone with SQLite's message") {
  Fixture f;
  REQUIRE(f.writer->RunSync(InsertOf("dup")).ok());
  f.Block();
  Outcomes out(2);
  f.Submit(
      [](Db* db) {
        Status s = Insert(db, "x1");
        return s.ok() ? Insert(db, "dup") : s;
      },
      out.For(0));
  f.Submit(InsertOf("x2"), out.For(1));
  f.UnblockAndWait(&out);
  CHECK(out.statuses[0].IsConflict());
  CHECK_THAT(out.statuses[0].message(), Catch::Contains("UNIQUE"));
  CHECK(out.statuses[1].ok());
  CHECK_FALSE(f.Visible("x1"));
  CHECK(f.Visible("x2"));
}

TEST_CASE("writer: a one-statement job without a savepoint fails alone by SQLite's statement rollback") {
  Fixture f;
  REQUIRE(f.writer->RunSync(InsertOf("dup")).ok());
  f.Block();
  Outcomes out(3);
  auto one_statement = [&](std::string sql, int i) {
    f.Submit([sql](Db* db) { return db->Exec(sql); }, out.For(i), /*savepoint=*/false);
  };
  one_statement("INSERT INTO t (v) VALUES ('y1')", 0);
  // One statement, two rows: the second breaks the unique key, so the first
  // must go too, though no savepoint was taken.
  one_statement("INSERT INTO t (v) VALUES ('y2'), ('dup')", 1);
  one_statement("INSERT INTO t (v) VALUES ('y3')", 2);
  f.UnblockAndWait(&out);
  CHECK(out.statuses[0].ok());
  CHECK(out.statuses[1].IsConflict());
  CHECK(out.statuses[2].ok());
  CHECK(f.Visible("y1"));
  CHECK_FALSE(f.Visible("y2"));
  CHECK(f.Visible("y3"));
}

TEST_CASE("writer: when SQLite rolls the group's transaction back on its own, every job of the group fails") {
  Fixture f;
  f.Block();
  Outcomes out(3);
  std::atomic<bool> third_ran{false};
  f.Submit(InsertOf("z1"), out.For(0), /*savepoint=*/false);
  // Stands for an I/O error after which SQLite has rolled back by itself.
  f.Submit(
      [](Db* db) {
        Status s = db->Exec("ROLLBACK");
        return s.ok() ? Status::IOError("disk I/O error") : s;
      },
      out.For(1), /*savepoint=*/false);
  f.Submit(
      [&third_ran](Db* db) {
        third_ran = true;
        return Insert(db, "z3");
      },
      out.For(2), /*savepoint=*/false);
  f.UnblockAndWait(&out);
  CHECK_FALSE(out.statuses[0].ok());  // its write went with the transaction
  CHECK(out.statuses[1].IsIOError());
  CHECK_FALSE(out.statuses[2].ok());
  CHECK_FALSE(third_ran.load());  // never run outside a transaction
  CHECK_FALSE(f.Visible("z1"));
  CHECK_FALSE(f.Visible("z3"));
  CHECK(f.writer->stats().transactions_lost.load() == 1);
  // The writer goes on with a fresh transaction.
  CHECK(f.writer->RunSync(InsertOf("after")).ok());
  CHECK(f.Visible("after"));
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
  CHECK(f.writer->RunSync(InsertOf("later")).ok());
  CHECK(f.Visible("later"));
}

// A failed job whose savepoint cannot be rolled back (here the job released
// it itself, so ROLLBACK TO finds none) would leave its changes in the
// group's transaction. Committing then writes what the job is told failed:
// the whole group fails instead, and every job hears it.
TEST_CASE("writer: a job whose savepoint cannot be rolled back fails its whole group") {
  Fixture f;
  f.Block();
  Outcomes out(3);
  f.Submit(InsertOf("a"), out.For(0));
  f.Submit(
      [](Db* db) {
        Status s = Insert(db, "b");
        if (!s.ok()) return s;
        s = db->Exec("RELEASE job");  // b now belongs to the group's transaction
        if (!s.ok()) return s;
        return Status::Conflict("job b gives up");
      },
      out.For(1));
  f.Submit(InsertOf("c"), out.For(2));
  f.UnblockAndWait(&out);
  CHECK_FALSE(f.Visible("b"));  // never committed while its job was told it failed
  CHECK_FALSE(out.statuses[1].ok());
  // The group failed whole: nothing of it is there, and no job was told Ok.
  CHECK_FALSE(f.Visible("a"));
  CHECK_FALSE(f.Visible("c"));
  CHECK_FALSE(out.statuses[0].ok());
  CHECK_FALSE(out.statuses[2].ok());
  CHECK(f.writer->stats().transactions_lost.load() == 1);
  // And the writer goes on.
  CHECK(f.writer->RunSync(InsertOf("d")).ok());
  CHECK(f.Visible("d"));
}

// A job without a savepoint that throws may have thrown after its one
// statement, which cannot be undone alone: its group fails whole, and the
// writer keeps serving.
TEST_CASE("writer: a job that throws without a savepoint fails its group, and the writer goes on") {
  Fixture f;
  f.Block();
  Outcomes out(2);
  f.Submit(InsertOf("a"), out.For(0));
  f.Submit(
      [](Db* db) -> Status {
        (void)Insert(db, "b");  // its one statement ran
        throw std::runtime_error("boom after the statement");
      },
      out.For(1), /*savepoint=*/false);
  f.UnblockAndWait(&out);
  CHECK_FALSE(out.statuses[0].ok());
  CHECK_FALSE(out.statuses[1].ok());
  CHECK_FALSE(f.Visible("a"));
  CHECK_FALSE(f.Visible("b"));
  CHECK(f.writer->RunSync(InsertOf("z")).ok());
  CHECK(f.Visible("z"));
}
