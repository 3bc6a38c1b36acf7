// The writer core's semantics (store/group_writer.h), each case once an
// engine: the SQLite Writer on a file, and the PgWriter on a database of a
// server this binary starts (tests/support/engines.h). The engines' own
// behaviour (SQLite's statement rollback and write lock, PostgreSQL's
// pipeline, locks and reconnects) is tested in tests/store/sqlite/writer_test.cc
// and tests/store/postgres/pg_writer_test.cc.
#include "store/group_writer.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/pg_writer.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/writer.h"
#include "tests/support/engines.h"
#include "tests/support/outcomes.h"
#include "tests/support/temp_dir.h"

namespace {

using store::GroupWriterBase;
using store::GroupWriterOptions;
using store::Status;
using testing::Outcomes;

// The test's table t (v text primary key), on the connection a job runs on.
class Table {
 public:
  virtual ~Table() = default;
  virtual Status Insert(const std::string& v) = 0;
};

using Work = std::function<Status(Table*)>;
using Reply = std::function<void(Status)>;

class SqliteTable final : public Table {
 public:
  explicit SqliteTable(store::Db* db) : db_(db) {}
  Status Insert(const std::string& v) override {
    return db_->Exec("INSERT INTO t (v) VALUES ('" + v + "')");
  }

 private:
  store::Db* db_;
};

class PgTable final : public Table {
 public:
  explicit PgTable(store::PgConn* conn) : conn_(conn) {}
  Status Insert(const std::string& v) override {
    return conn_->Run("INSERT INTO t (v) VALUES ($1)", {store::P(v)});
  }

 private:
  store::PgConn* conn_;
};

// A job of the engine's type made of a Work and a Reply.
template <typename Job, typename Conn, typename EngineTable>
class TestJob final : public Job {
 public:
  TestJob(Work work, Reply reply, bool solo)
      : work_(std::move(work)), reply_(std::move(reply)), solo_(solo) {}
  Status Apply(Conn* conn) override {
    EngineTable table(conn);
    return work_(&table);
  }
  void Done(Status status) override { reply_(std::move(status)); }
  bool solo() const override { return solo_; }

 private:
  Work work_;
  Reply reply_;
  bool solo_;
};

// One engine's writer (not started) on a fresh table t, and a reader of it.
class Subject {
 public:
  virtual ~Subject() = default;
  virtual GroupWriterBase& writer() = 0;
  virtual bool Submit(Work work, Reply reply, bool solo) = 0;
  virtual Status RunSync(Work work) = 0;
  // count(*) of t's rows, or of those whose v is `v` if not empty; false if
  // the query failed. No Catch2 in here: Done calls it on the writer thread.
  virtual bool TryCount(const std::string& v, int64_t* n) = 0;
};

// What a Subject does the same way on every engine, but for its types.
template <typename EngineWriter, typename Job, typename Conn, typename EngineTable>
class SubjectOf : public Subject {
 public:
  GroupWriterBase& writer() override { return *writer_; }
  bool Submit(Work work, Reply reply, bool solo) override {
    return writer_->Submit(std::make_unique<TestJob<Job, Conn, EngineTable>>(
        std::move(work), std::move(reply), solo));
  }
  Status RunSync(Work work) override {
    return writer_->RunSync([work](Conn* conn) {
      EngineTable table(conn);
      return work(&table);
    });
  }

 protected:
  std::unique_ptr<EngineWriter> writer_;
};

class SqliteSubject final
    : public SubjectOf<store::Writer, store::WriteJob, store::Db, SqliteTable> {
 public:
  explicit SqliteSubject(GroupWriterOptions options) {
    const std::string path = dir_.File("a.db");
    std::unique_ptr<store::Db> db;
    REQUIRE(store::Db::Open(path, {}, &db).ok());
    REQUIRE(store::Migrate(db.get()).ok());
    REQUIRE(db->Exec("CREATE TABLE t (v TEXT PRIMARY KEY)").ok());
    store::DbOptions ro;
    ro.read_only = true;
    REQUIRE(store::Db::Open(path, ro, &reader_).ok());
    writer_ = std::make_unique<store::Writer>(std::move(db), options);
  }
  bool TryCount(const std::string& v, int64_t* n) override {
    store::StatementRef q;
    if (!reader_->Cached("SELECT count(*) FROM t WHERE ?1 = '' OR v = ?1", &q).ok()) return false;
    q->Bind(1, v);
    bool row = false;
    if (!q->Step(&row).ok() || !row) return false;
    *n = q->ColumnInt64(0);
    return true;
  }

 private:
  testing::TempDir dir_;
  std::unique_ptr<store::Db> reader_;
};

class PgSubject final : public SubjectOf<store::PgWriter, store::PgJob, store::PgConn, PgTable> {
 public:
  explicit PgSubject(GroupWriterOptions options) {
    const std::string uri = testing::SharedPg().NewDatabaseUri();
    testing::PgServer::Query(uri, "CREATE TABLE t (v text PRIMARY KEY)");
    REQUIRE(store::PgConn::Connect(uri, "writer_core_test reader", &reader_).ok());
    store::PgWriterOptions pg;
    pg.max_queued_jobs = options.max_queued_jobs;
    pg.max_group_jobs = options.max_group_jobs;
    writer_ = std::make_unique<store::PgWriter>(uri, "writer_core_test", pg);
  }
  bool TryCount(const std::string& v, int64_t* n) override {
    store::PgResult r;
    if (!reader_->Run("SELECT count(*) FROM t WHERE $1 = '' OR v = $1", {store::P(v)}, &r).ok() ||
        r.rows() != 1) {
      return false;
    }
    *n = r.Int64(0, 0);
    return true;
  }

 private:
  std::unique_ptr<store::PgConn> reader_;
};

Work Insert(const std::string& v) {
  return [v](Table* t) { return t->Insert(v); };
}

// A writer of `engine` on table t, started, with the helpers of the cases.
struct Fixture {
  explicit Fixture(const std::string& engine, GroupWriterOptions options = {}) {
    if (engine == "postgres") {
      subject = std::make_unique<PgSubject>(options);
    } else {
      subject = std::make_unique<SqliteSubject>(options);
    }
    writer().Start();
  }

  GroupWriterBase& writer() { return subject->writer(); }
  const store::WriterStats& stats() { return writer().stats(); }
  bool Submit(Work work, Reply reply, bool solo = false) {
    return subject->Submit(std::move(work), std::move(reply), solo);
  }

  // Submits a job that holds the writer thread until Unblock(), and waits
  // until the writer is inside it: what is submitted next queues up.
  // Returns the transactions committed before.
  uint64_t Block() {
    auto inside = std::make_shared<std::promise<void>>();
    auto entered = inside->get_future();
    release = std::promise<void>();
    auto gate = release.get_future().share();
    REQUIRE(Submit(
        [inside, gate](Table*) {
          inside->set_value();
          gate.wait();
          return Status::Ok();
        },
        [](Status) {}));
    entered.wait();
    return stats().transactions.load();
  }
  void Unblock() { release.set_value(); }

  bool Visible(const std::string& v) {
    int64_t n = 0;
    REQUIRE(subject->TryCount(v, &n));
    return n == 1;
  }
  int64_t Rows() {
    int64_t n = 0;
    REQUIRE(subject->TryCount("", &n));
    return n;
  }

  std::unique_ptr<Subject> subject;
  std::promise<void> release;
};

}  // namespace

TEST_CASE("writer core: jobs submitted while a commit is in flight are committed together") {
  Fixture f(EDGEALLOC_ENGINES);
  const uint64_t before = f.Block();
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
        if (!f.Submit(Insert("j" + std::to_string(n)), out.For(n))) refused.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(refused.load() == 0);
  f.Unblock();
  out.Wait();
  for (const Status& s : out.statuses) CHECK(s.ok());
  // One transaction for the blocking job, then the 100 in very few groups.
  const uint64_t used = f.stats().transactions.load() - before;
  INFO("transactions for " << kJobs << " jobs: " << used);
  CHECK(used < kJobs / 10);
  CHECK(f.Rows() == kJobs);
  CHECK(f.stats().jobs_ok.load() == kJobs + 1);
}

TEST_CASE("writer core: a failing job is rolled back alone while the rest of its group commits") {
  Fixture f(EDGEALLOC_ENGINES);
  const uint64_t before = f.Block();
  Outcomes out(3);
  REQUIRE(f.Submit(Insert("a"), out.For(0)));
  REQUIRE(f.Submit(
      [](Table* t) {
        Status s = t->Insert("b");  // written, then the job fails
        if (!s.ok()) return s;
        return Status::Conflict("job b gives up");
      },
      out.For(1)));
  REQUIRE(f.Submit(Insert("c"), out.For(2)));
  f.Unblock();
  out.Wait();
  CHECK(f.stats().transactions.load() - before == 2);  // the blocker's, then one group
  CHECK(out.statuses[0].ok());
  CHECK(out.statuses[1].IsConflict());
  CHECK(out.statuses[1].message() == "job b gives up");
  CHECK(out.statuses[2].ok());
  CHECK(f.Visible("a"));
  CHECK_FALSE(f.Visible("b"));
  CHECK(f.Visible("c"));
  CHECK(f.stats().jobs_failed.load() == 1);
}

TEST_CASE("writer core: Done runs only after the commit: a separate reader already sees the row") {
  Fixture f(EDGEALLOC_ENGINES);
  constexpr int kJobs = 20;
  Outcomes out(kJobs);
  std::atomic<int> seen{0};
  std::mutex reader_mu;  // Done runs on the writer thread; the reader is ours
  for (int i = 0; i < kJobs; ++i) {
    const std::string v = "d" + std::to_string(i);
    auto record = out.For(i);
    REQUIRE(f.Submit(Insert(v), [&, v, record](Status s) {
      {
        std::lock_guard<std::mutex> lock(reader_mu);
        int64_t n = 0;
        if (f.subject->TryCount(v, &n) && n == 1) ++seen;
      }
      record(std::move(s));
    }));
  }
  out.Wait();
  for (const Status& s : out.statuses) CHECK(s.ok());
  CHECK(seen.load() == kJobs);
}

TEST_CASE("writer core: Submit refuses beyond max_queued_jobs without calling Done") {
  GroupWriterOptions options;
  options.max_queued_jobs = 4;
  Fixture f(EDGEALLOC_ENGINES, options);
  f.Block();
  std::atomic<int> done{0};
  int accepted = 0;
  for (int i = 0; i < 10; ++i) {
    if (f.Submit(Insert("q" + std::to_string(i)), [&](Status s) {
          CHECK(s.ok());
          ++done;
        })) {
      ++accepted;
    }
  }
  CHECK(accepted >= 3);  // 4 queued, or 3 if the job in flight counts
  CHECK(accepted <= 4);
  CHECK(f.stats().refused.load() == static_cast<uint64_t>(10 - accepted));
  f.Unblock();
  f.writer().Stop();
  CHECK(done.load() == accepted);
  CHECK(f.Rows() == accepted);
}

TEST_CASE("writer core: Stop runs every accepted job before it returns, then refuses new ones") {
  Fixture f(EDGEALLOC_ENGINES);
  f.Block();
  constexpr int kJobs = 300;
  Outcomes out(kJobs);
  for (int i = 0; i < kJobs; ++i) REQUIRE(f.Submit(Insert("s" + std::to_string(i)), out.For(i)));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    f.writer().Stop();
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
  CHECK_FALSE(f.Submit([](Table*) { return Status::Ok(); }, [&](Status) { called = true; }));
  CHECK_FALSE(called);
  CHECK(f.subject->RunSync([](Table*) { return Status::Ok(); }).IsBusy());
  f.writer().Stop();  // idempotent
}

TEST_CASE("writer core: a solo job gets a transaction of its own") {
  Fixture f(EDGEALLOC_ENGINES);
  const uint64_t before = f.Block();
  Outcomes out(5);
  REQUIRE(f.Submit(Insert("g1"), out.For(0)));
  REQUIRE(f.Submit(Insert("g2"), out.For(1)));
  REQUIRE(f.Submit(Insert("solo"), out.For(2), /*solo=*/true));
  REQUIRE(f.Submit(Insert("g3"), out.For(3)));
  REQUIRE(f.Submit(Insert("g4"), out.For(4)));
  f.Unblock();
  out.Wait();
  // The blocker, [g1 g2], [solo], [g3 g4].
  CHECK(f.stats().transactions.load() - before == 4);
  for (const Status& s : out.statuses) CHECK(s.ok());
  CHECK(f.Rows() == 5);
}

TEST_CASE("writer core: RunSync returns the job's own status, and nothing of a failed job stays") {
  Fixture f(EDGEALLOC_ENGINES);
  CHECK(f.subject->RunSync(Insert("r1")).ok());
  Status s = f.subject->RunSync([](Table* t) {
    Status st = t->Insert("r2");
    return st.ok() ? Status::NotFound("nothing here") : st;
  });
  CHECK(s.IsNotFound());
  CHECK(f.Visible("r1"));
  CHECK_FALSE(f.Visible("r2"));
}

// An exception from a job must not end the process with accepted work
// unanswered: a job that throws fails alone (its savepoint undone), a Done
// that throws loses only its own reply, and the writer keeps serving.
TEST_CASE("writer core: a job that throws fails, the others are answered, and the writer goes on") {
  Fixture f(EDGEALLOC_ENGINES);
  SECTION("Apply throws: that job alone fails") {
    f.Block();
    Outcomes out(3);
    REQUIRE(f.Submit(Insert("a"), out.For(0)));
    REQUIRE(f.Submit(
        [](Table* t) -> Status {
          (void)t->Insert("b");
          throw std::runtime_error("boom");
        },
        out.For(1)));
    REQUIRE(f.Submit(Insert("c"), out.For(2)));
    f.Unblock();
    out.Wait();
    CHECK(out.statuses[0].ok());
    CHECK_THAT(out.statuses[1].message(), Catch::Contains("boom"));
    CHECK(out.statuses[2].ok());
    CHECK(f.Visible("a"));
    CHECK_FALSE(f.Visible("b"));
    CHECK(f.Visible("c"));
  }
  SECTION("Done throws: the other jobs still get theirs") {
    f.Block();
    Outcomes out(2);
    REQUIRE(f.Submit(Insert("a"), [](Status) { throw std::runtime_error("reply lost"); }));
    REQUIRE(f.Submit(Insert("b"), out.For(0)));
    REQUIRE(f.Submit(Insert("c"), out.For(1)));
    f.Unblock();
    out.Wait();
    CHECK(out.statuses[0].ok());
    CHECK(out.statuses[1].ok());
    CHECK(f.Visible("a"));
    CHECK(f.stats().done_exceptions.load() == 1);
  }
  CHECK(f.subject->RunSync(Insert("z")).ok());
  CHECK(f.Visible("z"));
}
