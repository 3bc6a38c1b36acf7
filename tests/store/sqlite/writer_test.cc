#include "store/sqlite/writer.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite/schema.h"
#include "tests/support/fn_job.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Status;
using store::WriteJob;
using store::Writer;
using store::WriterOptions;

using testing::FnJob;

Status Insert(Db* db, const std::string& v) {
  return db->Exec("INSERT INTO t (v) VALUES ('" + v + "')");
}

// A file with table t, migrated, and a Writer on it (not started).
struct Fixture {
  explicit Fixture(WriterOptions options = {}, DbOptions db_options = {}) {
    path = dir.File("a.db");
    std::unique_ptr<Db> db;
    REQUIRE(Db::Open(path, db_options, &db).ok());
    REQUIRE(store::Migrate(db.get()).ok());
    REQUIRE(db->Exec("CREATE TABLE t (v TEXT PRIMARY KEY)").ok());
    DbOptions ro;
    ro.read_only = true;
    REQUIRE(Db::Open(path, ro, &reader).ok());
    writer = std::make_unique<Writer>(std::move(db), options);
  }
  ~Fixture() { writer.reset(); }

  // Submits a job that holds the writer thread until Unblock(), and waits
  // until the writer is inside it: what is submitted next queues up.
  void Block() {
    std::promise<void> inside;
    auto entered = inside.get_future();
    release = std::promise<void>();
    auto gate = release.get_future().share();
    auto inside_ptr = std::make_shared<std::promise<void>>(std::move(inside));
    REQUIRE(writer->Submit(std::make_unique<FnJob>(
        [inside_ptr, gate](Db*) {
          inside_ptr->set_value();
          gate.wait();
          return Status::Ok();
        },
        [](Status) {})));
    entered.wait();
  }
  void Unblock() { release.set_value(); }

  bool Visible(const std::string& v) {
    bool visible = false;
    REQUIRE(TryVisible(v, &visible));
    return visible;
  }
  // As Visible, without Catch2 (whose v2 assertions are not thread-safe), for
  // other threads: false if the query failed.
  bool TryVisible(const std::string& v, bool* visible) {
    Status s;
    store::StatementRef q;
    s = reader->Cached("SELECT count(*) FROM t WHERE v = ?1", &q);
    if (!s.ok()) return false;
    q->Bind(1, v);
    bool row = false;
    if (!q->Step(&row).ok()) return false;
    *visible = q->ColumnInt64(0) == 1;
    return true;
  }
  int64_t Rows() {
    Status s;
    store::StatementRef q;
    s = reader->Cached("SELECT count(*) FROM t", &q);
    REQUIRE(s.ok());
    bool row = false;
    REQUIRE(q->Step(&row).ok());
    return q->ColumnInt64(0);
  }

  testing::TempDir dir;
  std::string path;
  std::unique_ptr<Db> reader;
  std::unique_ptr<Writer> writer;
  std::promise<void> release;
};

// Collects the Done statuses of many jobs; Wait blocks until all came.
struct Outcomes {
  explicit Outcomes(size_t n) : statuses(n) {}
  std::function<void(Status)> For(size_t i) {
    return [this, i](Status s) {
      std::lock_guard<std::mutex> lock(mu);
      statuses[i] = std::move(s);
      if (++count == statuses.size()) all.set_value();
    };
  }
  // Takes mu once after the last status came: the callback that set `all`
  // still holds it, and this object (on the test's stack) must outlive that
  // callback's unlock (ThreadSanitizer saw the next test reuse the frame).
  void Wait() {
    all.get_future().wait();
    std::lock_guard<std::mutex> lock(mu);
  }
  std::mutex mu;
  std::vector<Status> statuses;
  size_t count = 0;
  std::promise<void> all;
};

}  // namespace

TEST_CASE("writer: jobs submitted while a commit is in flight are committed together") {
  Fixture f;
  f.writer->Start();
  f.Block();
  const uint64_t before = f.writer->stats().transactions.load();
  constexpr int kThreads = 4, kPerThread = 25, kJobs = kThreads * kPerThread;
  Outcomes out(kJobs);
  std::vector<std::thread> threads;
  // Counted here, checked on the main thread: Catch2 v2 assertions are not
  // thread-safe.
  std::atomic<int> refused{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int n = t * kPerThread + i;
        if (!f.writer->Submit(std::make_unique<FnJob>(
                [n](Db* db) { return Insert(db, "j" + std::to_string(n)); }, out.For(n)))) {
          refused.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(refused.load() == 0);
  f.Unblock();
  out.Wait();
  for (const Status& s : out.statuses) CHECK(s.ok());
  // One transaction for the blocking job, then the 100 in very few groups.
  const uint64_t used = f.writer->stats().transactions.load() - before;
  INFO("transactions for " << kJobs << " jobs: " << used);
  CHECK(used < kJobs / 10);
  CHECK(f.Rows() == kJobs);
  CHECK(f.writer->stats().jobs_ok.load() == kJobs + 1);
}

TEST_CASE("writer: a failing job is rolled back alone while the rest of its group commits") {
  Fixture f;
  f.writer->Start();
  f.Block();
  const uint64_t before = f.writer->stats().transactions.load();
  Outcomes out(3);
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "a"); },
                                                   out.For(0))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
      [](Db* db) {
        Status s = Insert(db, "b");  // written, then the job fails
        if (!s.ok()) return s;
        return Status::Conflict("job b gives up");
      },
      out.For(1))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "c"); },
                                                   out.For(2))));
  f.Unblock();
  out.Wait();
  CHECK(f.writer->stats().transactions.load() - before == 2);  // the blocker's, then one group
  CHECK(out.statuses[0].ok());
  CHECK(out.statuses[1].IsConflict());
  CHECK(out.statuses[1].message() == "job b gives up");
  CHECK(out.statuses[2].ok());
  CHECK(f.Visible("a"));
  CHECK_FALSE(f.Visible("b"));
  CHECK(f.Visible("c"));
  CHECK(f.writer->stats().jobs_failed.load() == 1);
}

TEST_CASE("writer: a job that breaks a constraint fails alone with SQLite's message") {
  Fixture f;
  f.writer->Start();
  REQUIRE(f.writer->RunSync([](Db* db) { return Insert(db, "dup"); }).ok());
  f.Block();
  Outcomes out(2);
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
      [](Db* db) {
        Status s = Insert(db, "x1");
        return s.ok() ? Insert(db, "dup") : s;
      },
      out.For(0))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "x2"); },
                                                   out.For(1))));
  f.Unblock();
  out.Wait();
  CHECK(out.statuses[0].IsConflict());
  CHECK_THAT(out.statuses[0].message(), Catch::Contains("UNIQUE"));
  CHECK(out.statuses[1].ok());
  CHECK_FALSE(f.Visible("x1"));
  CHECK(f.Visible("x2"));
}

TEST_CASE("writer: a one-statement job without a savepoint fails alone by SQLite's statement rollback") {
  Fixture f;
  f.writer->Start();
  REQUIRE(f.writer->RunSync([](Db* db) { return Insert(db, "dup"); }).ok());
  f.Block();
  Outcomes out(3);
  auto one_statement = [&](std::string sql, int i) {
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
        [sql](Db* db) { return db->Exec(sql); }, out.For(i), /*solo=*/false,
        /*savepoint=*/false)));
  };
  one_statement("INSERT INTO t (v) VALUES ('y1')", 0);
  // One statement, two rows: the second breaks the unique key, so the first
  // must go too, though no savepoint was taken.
  one_statement("INSERT INTO t (v) VALUES ('y2'), ('dup')", 1);
  one_statement("INSERT INTO t (v) VALUES ('y3')", 2);
  f.Unblock();
  out.Wait();
  CHECK(out.statuses[0].ok());
  CHECK(out.statuses[1].IsConflict());
  CHECK(out.statuses[2].ok());
  CHECK(f.Visible("y1"));
  CHECK_FALSE(f.Visible("y2"));
  CHECK(f.Visible("y3"));
}

TEST_CASE("writer: when SQLite rolls the group's transaction back on its own, every job of the group fails") {
  Fixture f;
  f.writer->Start();
  f.Block();
  Outcomes out(3);
  std::atomic<bool> third_ran{false};
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "z1"); },
                                                   out.For(0), false, /*savepoint=*/false)));
  // Stands for an I/O error after which SQLite has rolled back by itself.
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
      [](Db* db) {
        Status s = db->Exec("ROLLBACK");
        return s.ok() ? Status::IOError("disk I/O error") : s;
      },
      out.For(1), false, /*savepoint=*/false)));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
      [&third_ran](Db* db) {
        third_ran = true;
        return Insert(db, "z3");
      },
      out.For(2), false, /*savepoint=*/false)));
  f.Unblock();
  out.Wait();
  CHECK_FALSE(out.statuses[0].ok());  // its write went with the transaction
  CHECK(out.statuses[1].IsIOError());
  CHECK_FALSE(out.statuses[2].ok());
  CHECK_FALSE(third_ran.load());  // never run outside a transaction
  CHECK_FALSE(f.Visible("z1"));
  CHECK_FALSE(f.Visible("z3"));
  CHECK(f.writer->stats().transactions_lost.load() == 1);
  // The writer goes on with a fresh transaction.
  CHECK(f.writer->RunSync([](Db* db) { return Insert(db, "after"); }).ok());
  CHECK(f.Visible("after"));
}

TEST_CASE("writer: Done runs only after the commit: a separate reader already sees the row") {
  Fixture f;
  f.writer->Start();
  constexpr int kJobs = 20;
  Outcomes out(kJobs);
  std::atomic<int> seen{0};
  std::mutex reader_mu;  // Done runs on the writer thread; the reader is ours
  for (int i = 0; i < kJobs; ++i) {
    const std::string v = "d" + std::to_string(i);
    auto record = out.For(i);
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
        [v](Db* db) { return Insert(db, v); },
        [&, v, record](Status s) {
          {
            std::lock_guard<std::mutex> lock(reader_mu);
            bool visible = false;
            if (f.TryVisible(v, &visible) && visible) ++seen;
          }
          record(std::move(s));
        })));
  }
  out.Wait();
  for (const Status& s : out.statuses) CHECK(s.ok());
  CHECK(seen.load() == kJobs);
}

TEST_CASE("writer: Submit refuses beyond max_queued_jobs without calling Done") {
  WriterOptions options;
  options.max_queued_jobs = 4;
  Fixture f(options);
  f.writer->Start();
  f.Block();
  std::atomic<int> done{0};
  int accepted = 0;
  for (int i = 0; i < 10; ++i) {
    if (f.writer->Submit(std::make_unique<FnJob>(
            [i](Db* db) { return Insert(db, "q" + std::to_string(i)); },
            [&](Status s) {
              CHECK(s.ok());
              ++done;
            }))) {
      ++accepted;
    }
  }
  CHECK(accepted >= 3);  // 4 queued, or 3 if the job in flight counts
  CHECK(accepted <= 4);
  CHECK(f.writer->stats().refused.load() == static_cast<uint64_t>(10 - accepted));
  f.Unblock();
  f.writer->Stop();
  CHECK(done.load() == accepted);
  CHECK(f.Rows() == accepted);
}

TEST_CASE("writer: Stop runs every accepted job before it returns, then refuses new ones") {
  Fixture f;
  f.writer->Start();
  f.Block();
  constexpr int kJobs = 300;
  Outcomes out(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
        [i](Db* db) { return Insert(db, "s" + std::to_string(i)); }, out.For(i))));
  }
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    f.writer->Stop();
    stopped = true;
  });
  // Stop must wait for the blocked job and the 300 behind it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(stopped.load());
  f.Unblock();
  stopper.join();
  CHECK(out.count == kJobs);
  for (const Status& s : out.statuses) CHECK(s.ok());
  CHECK(f.Rows() == kJobs);
  bool called = false;
  CHECK_FALSE(f.writer->Submit(
      std::make_unique<FnJob>([](Db*) { return Status::Ok(); }, [&](Status) { called = true; })));
  CHECK_FALSE(called);
  CHECK(f.writer->RunSync([](Db*) { return Status::Ok(); }).IsBusy());
  f.writer->Stop();  // idempotent
}

TEST_CASE("writer: a solo job gets a transaction of its own") {
  Fixture f;
  f.writer->Start();
  f.Block();
  const uint64_t before = f.writer->stats().transactions.load();
  Outcomes out(5);
  auto insert = [](std::string v) { return [v](Db* db) { return Insert(db, v); }; };
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(insert("g1"), out.For(0))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(insert("g2"), out.For(1))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(insert("solo"), out.For(2), /*solo=*/true)));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(insert("g3"), out.For(3))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(insert("g4"), out.For(4))));
  f.Unblock();
  out.Wait();
  // The blocker, [g1 g2], [solo], [g3 g4].
  CHECK(f.writer->stats().transactions.load() - before == 4);
  for (const Status& s : out.statuses) CHECK(s.ok());
  CHECK(f.Rows() == 5);
}

TEST_CASE("writer: RunSync returns the job's own status, and nothing of a failed job stays") {
  Fixture f;
  f.writer->Start();
  CHECK(f.writer->RunSync([](Db* db) { return Insert(db, "r1"); }).ok());
  Status s = f.writer->RunSync([](Db* db) {
    Status st = Insert(db, "r2");
    return st.ok() ? Status::NotFound("nothing here") : st;
  });
  CHECK(s.IsNotFound());
  CHECK(f.Visible("r1"));
  CHECK_FALSE(f.Visible("r2"));
}

TEST_CASE("writer: when another process holds the write lock, the group fails Busy and writes nothing") {
  DbOptions options;
  options.write_lock_timeout_ms = 50;
  Fixture f({}, options);
  f.writer->Start();
  std::unique_ptr<Db> other;
  REQUIRE(Db::Open(f.path, {}, &other).ok());
  {
    store::Transaction held(other.get());
    REQUIRE(held.Begin().ok());
    Status s = f.writer->RunSync([](Db* db) { return Insert(db, "blocked"); });
    INFO(s.ToString());
    CHECK(s.IsBusy());
    CHECK_THAT(s.message(), Catch::Contains("held by pid"));
  }
  CHECK_FALSE(f.Visible("blocked"));
  CHECK(f.writer->RunSync([](Db* db) { return Insert(db, "later"); }).ok());
  CHECK(f.Visible("later"));
}

// Issue #11, defect 4: a failed job whose savepoint cannot be rolled back
// (here the job released it itself, so ROLLBACK TO finds none) would leave
// its changes in the group's transaction. Committing then writes what the
// job is told failed: the whole group fails instead, and every job hears it.
TEST_CASE("writer: a job whose savepoint cannot be rolled back fails its whole group") {
  Fixture f;
  f.writer->Start();
  f.Block();
  Outcomes out(3);
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "a"); },
                                                   out.For(0))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
      [](Db* db) {
        Status s = Insert(db, "b");
        if (!s.ok()) return s;
        s = db->Exec("RELEASE job");  // b now belongs to the group's transaction
        if (!s.ok()) return s;
        return Status::Conflict("job b gives up");
      },
      out.For(1))));
  REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "c"); },
                                                   out.For(2))));
  f.Unblock();
  out.Wait();
  CHECK_FALSE(f.Visible("b"));  // never committed while its job was told it failed
  CHECK_FALSE(out.statuses[1].ok());
  // The group failed whole: nothing of it is there, and no job was told Ok.
  CHECK_FALSE(f.Visible("a"));
  CHECK_FALSE(f.Visible("c"));
  CHECK_FALSE(out.statuses[0].ok());
  CHECK_FALSE(out.statuses[2].ok());
  CHECK(f.writer->stats().transactions_lost.load() == 1);
  // And the writer goes on.
  CHECK(f.writer->RunSync([](Db* db) { return Insert(db, "d"); }).ok());
  CHECK(f.Visible("d"));
}

// Issue #11, defect 4: an exception from a job must not end the process with
// accepted work unanswered. A job with a savepoint that throws fails alone;
// one without (its statement may have run) fails its group; a Done that
// throws loses only its own reply; the writer keeps serving.
TEST_CASE("writer: a job that throws fails, the others are answered, and the writer goes on") {
  Fixture f;
  f.writer->Start();
  SECTION("Apply throws under a savepoint: that job alone fails") {
    f.Block();
    Outcomes out(3);
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "a"); },
                                                     out.For(0))));
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
        [](Db* db) -> Status {
          (void)Insert(db, "b");
          throw std::runtime_error("boom");
        },
        out.For(1))));
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "c"); },
                                                     out.For(2))));
    f.Unblock();
    out.Wait();
    CHECK(out.statuses[0].ok());
    CHECK_THAT(out.statuses[1].message(), Catch::Contains("boom"));
    CHECK(out.statuses[2].ok());
    CHECK(f.Visible("a"));
    CHECK_FALSE(f.Visible("b"));
    CHECK(f.Visible("c"));
  }
  SECTION("Apply throws without a savepoint: its group fails whole") {
    f.Block();
    Outcomes out(2);
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "a"); },
                                                     out.For(0))));
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
        [](Db* db) -> Status {
          (void)Insert(db, "b");  // its one statement ran
          throw std::runtime_error("boom after the statement");
        },
        out.For(1), /*solo=*/false, /*savepoint=*/false)));
    f.Unblock();
    out.Wait();
    CHECK_FALSE(out.statuses[0].ok());
    CHECK_FALSE(out.statuses[1].ok());
    CHECK_FALSE(f.Visible("a"));
    CHECK_FALSE(f.Visible("b"));
  }
  SECTION("Done throws: the other jobs still get theirs") {
    f.Block();
    Outcomes out(2);
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>(
        [](Db* db) { return Insert(db, "a"); },
        [](Status) { throw std::runtime_error("reply lost"); })));
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "b"); },
                                                     out.For(0))));
    REQUIRE(f.writer->Submit(std::make_unique<FnJob>([](Db* db) { return Insert(db, "c"); },
                                                     out.For(1))));
    f.Unblock();
    out.Wait();
    CHECK(out.statuses[0].ok());
    CHECK(out.statuses[1].ok());
    CHECK(f.Visible("a"));
    CHECK(f.writer->stats().done_exceptions.load() == 1);
  }
  CHECK(f.writer->RunSync([](Db* db) { return Insert(db, "z"); }).ok());
  CHECK(f.Visible("z"));
}
