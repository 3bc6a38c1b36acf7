#include "store/postgres/pg_writer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <thread>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/pg_server.h"

namespace {

// A job that runs `sql` (several statements allowed) and reports its outcome.
class SqlJob : public store::PgJob {
 public:
  SqlJob(std::string sql, std::promise<store::Status>* done) : sql_(std::move(sql)), done_(done) {}
  store::Status Apply(store::PgConn* conn) override { return conn->Exec(sql_); }
  void Done(store::Status status) override { done_->set_value(std::move(status)); }

 private:
  std::string sql_;
  std::promise<store::Status>* done_;
};

// A server of its own with a fresh database, with table t (v int primary
// key) unless `table` is false.
struct Db {
  explicit Db(bool table = true) : uri(server.NewDatabaseUri()) {
    if (table) testing::PgServer::Query(uri, "CREATE TABLE t (v int PRIMARY KEY)");
  }
  // t's values in order, comma separated.
  std::string Values() const {
    return testing::PgServer::Query(uri, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t");
  }
  testing::PgServer server;
  std::string uri;
};

// Table t and a started writer on it.
struct Fixture {
  explicit Fixture(store::PgWriterOptions options = {})
      : writer(db.uri, "pg_writer_test", options) {
    writer.Start();
  }
  // Queues a job that holds the writer for 0.3 s, so that the jobs
  // submitted next make one group.
  void Hold() { REQUIRE(writer.Submit(std::make_unique<SqlJob>("SELECT pg_sleep(0.3)", &held))); }
  void Submit(std::unique_ptr<store::PgJob> job) { REQUIRE(writer.Submit(std::move(job))); }
  // Once the jobs were answered: the holding job was answered Ok too; stops
  // the writer and returns t's values.
  std::string ValuesAfterStop() {
    CHECK(held.get_future().get().ok());
    writer.Stop();
    return db.Values();
  }
  Db db;
  store::PgWriter writer;
  std::promise<store::Status> held;
};

}  // namespace

TEST_CASE("pg_writer: a failing job in a group is undone alone, the others commit") {
  Fixture f;
  std::promise<store::Status> a_done, b_done, c_done;
  f.Hold();
  f.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (1)", &a_done));
  // Writes, then fails: its write must not survive.
  f.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (2); SELECT 1/0", &b_done));
  f.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (3)", &c_done));
  CHECK(a_done.get_future().get().ok());
  store::Status b_status = b_done.get_future().get();
  CHECK_FALSE(b_status.ok());
  CHECK_THAT(b_status.message(), Catch::Contains("division by zero"));
  CHECK(c_done.get_future().get().ok());
  CHECK(f.ValuesAfterStop() == "1,3");
  // The failed job is counted; the others were answered Ok above.
  CHECK(f.writer.stats().jobs_failed.load() == 1);
}

namespace {

// A job that holds the advisory lock of `key` (as a claim under a quota
// does) and runs `sql`.
class LockingJob : public SqlJob {
 public:
  LockingJob(std::string key, std::string sql, std::promise<store::Status>* done)
      : SqlJob(std::move(sql), done), key_(std::move(key)) {}
  void AddLockKeys(std::vector<std::string>* keys) const override { keys->push_back(key_); }

 private:
  std::string key_;
};

// A job that runs a statement, then stalls (as a node stopped mid-group).
class StallingJob : public store::PgJob {
 public:
  StallingJob(std::promise<void>* started, std::atomic<bool>* stall_over,
              std::promise<store::Status>* done)
      : started_(started), stall_over_(stall_over), done_(done) {}
  store::Status Apply(store::PgConn* conn) override {
    store::Status s = conn->Exec("SELECT pg_advisory_xact_lock(42)");
    started_->set_value();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    stall_over_->store(true);
    return s;
  }
  void Done(store::Status status) override { done_->set_value(std::move(status)); }

 private:
  std::promise<void>* started_;
  std::atomic<bool>* stall_over_;
  std::promise<store::Status>* done_;
};

}  // namespace

// Another node's transaction holds a tenant's lock and stalls: a group that
// needs it fails after lock_timeout (Busy: 503 overloaded, retry) instead of
// waiting as long as the stall lasts; once the lock is free it goes through.
TEST_CASE("pg_writer: a lock a stalled peer holds fails the group after lock_timeout") {
  Db db(/*table=*/false);
  const std::string& uri = db.uri;
  std::unique_ptr<store::PgConn> peer;
  REQUIRE(store::PgConn::Connect(uri, "stalled peer", &peer).ok());
  REQUIRE(peer->Exec("BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('acme', 0))").ok());

  store::PgWriterOptions options;
  options.lock_timeout_ms = 300;
  store::PgWriter writer(uri, "pg_writer_test", options);
  writer.Start();
  std::promise<store::Status> blocked;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(writer.Submit(std::make_unique<LockingJob>("acme", "SELECT 1", &blocked)));
  store::Status s = blocked.get_future().get();
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(s.IsBusy());
  CHECK(waited >= std::chrono::milliseconds(250));
  CHECK(waited < std::chrono::seconds(10));

  REQUIRE(peer->Exec("COMMIT").ok());
  std::promise<store::Status> freed;
  REQUIRE(writer.Submit(std::make_unique<LockingJob>("acme", "SELECT 1", &freed)));
  CHECK(freed.get_future().get().ok());
}

// Our own writer stalls inside a transaction holding a lock: PostgreSQL
// ends its session after idle_in_transaction_session_timeout, so the lock
// goes back to the other nodes long before the stall ends; the stalled
// group fails (nothing of it committed), and the writer reconnects for the
// next one.
TEST_CASE("pg_writer: a writer stalled mid-transaction loses its session and its locks") {
  store::PgWriterOptions options;
  options.idle_in_transaction_timeout_ms = 300;
  Fixture f(options);
  store::PgWriter& writer = f.writer;
  const std::string& uri = f.db.uri;
  std::promise<void> started;
  std::atomic<bool> stall_over{false};
  std::promise<store::Status> stalled;
  REQUIRE(writer.Submit(std::make_unique<StallingJob>(&started, &stall_over, &stalled)));
  started.get_future().get();

  std::unique_ptr<store::PgConn> other;
  REQUIRE(store::PgConn::Connect(uri, "another node", &other).ok());
  REQUIRE(other->Exec("SELECT pg_advisory_lock(42)").ok());  // waits for the lock
  CHECK_FALSE(stall_over.load());  // got it while the writer still stalls
  REQUIRE(other->Exec("SELECT pg_advisory_unlock(42)").ok());

  CHECK_FALSE(stalled.get_future().get().ok());
  std::promise<store::Status> next;
  REQUIRE(writer.Submit(std::make_unique<SqlJob>("SELECT 1", &next)));
  CHECK(next.get_future().get().ok());
  CHECK(writer.stats().reconnects.load() >= 1);
}

namespace {

constexpr char kInsertReturning[] = "INSERT INTO t VALUES ($1::int) RETURNING v";

// A job that declares `first` as its first statement (PgJob::First) and
// whose Apply runs `runs` in order, each as kInsertReturning; it records
// what the first one returned.
class InsertingJob : public store::PgJob {
 public:
  InsertingJob(int first, std::vector<int> runs, std::promise<store::Status>* done,
               std::string* returned)
      : first_(first), runs_(std::move(runs)), done_(done), returned_(returned) {}
  std::optional<store::PgStatement> First() const override {
    return store::PgStatement{kInsertReturning, {store::P(int64_t{first_})}};
  }
  store::Status Apply(store::PgConn* conn) override {
    for (size_t i = 0; i < runs_.size(); ++i) {
      store::PgResult r;
      RETURN_IF_ERROR(conn->Run(kInsertReturning, {store::P(int64_t{runs_[i]})}, &r));
      if (i == 0) *returned_ = r.rows() == 1 ? r.String(0, 0) : "";
    }
    return store::Status::Ok();
  }
  void Done(store::Status status) override { done_->set_value(std::move(status)); }

 private:
  int first_;
  std::vector<int> runs_;
  std::promise<store::Status>* done_;
  std::string* returned_;
};

}  // namespace

// The jobs' first statements go ahead in one pipeline; each Apply gets its
// statement's result from there, and nothing runs twice (an insert run
// again would break the primary key).
TEST_CASE("pg_writer: first statements are pipelined and answered once") {
  Fixture f;
  f.Hold();
  std::promise<store::Status> done[3];
  std::string returned[3];
  for (int i = 0; i < 3; ++i) {
    f.Submit(std::make_unique<InsertingJob>(i + 1, std::vector<int>{i + 1, 10 + i}, &done[i],
                                            &returned[i]));
  }
  for (int i = 0; i < 3; ++i) {
    CHECK(done[i].get_future().get().ok());
    CHECK(returned[i] == std::to_string(i + 1));
  }
  CHECK(f.ValuesAfterStop() == "1,2,3,10,11,12");
  CHECK(f.writer.stats().groups_rerun.load() == 0);
}

// A job whose Apply does not run its declared first statement first: what
// the pipeline ran ahead is rolled back and the group runs again job by
// job, so the job's statements end as it ran them, once each.
TEST_CASE("pg_writer: a first statement run out of order makes the group run again") {
  Fixture f;
  std::promise<store::Status> good_done, odd_done;
  std::string good_returned, odd_returned;
  f.Hold();
  f.Submit(std::make_unique<InsertingJob>(1, std::vector<int>{1}, &good_done, &good_returned));
  // Declares 10 first but inserts 20 before it.
  f.Submit(
      std::make_unique<InsertingJob>(10, std::vector<int>{20, 10}, &odd_done, &odd_returned));
  CHECK(good_done.get_future().get().ok());
  CHECK(odd_done.get_future().get().ok());
  CHECK(odd_returned == "20");
  CHECK(f.ValuesAfterStop() == "1,10,20");
  CHECK(f.writer.stats().groups_rerun.load() == 1);
}

namespace {

// A job that changes rows of `containers` in the order given, pausing
// between them, and names them (or not) as the rows it will change.
class RowsJob : public SqlJob {
 public:
  RowsJob(std::vector<std::string> ids, bool name_rows, std::promise<store::Status>* done)
      : SqlJob(Sql(ids), done), ids_(std::move(ids)), name_rows_(name_rows) {}
  void AddRowLocks(std::vector<std::string>* ids, std::vector<std::string>*) const override {
    if (name_rows_) ids->insert(ids->end(), ids_.begin(), ids_.end());
  }

 private:
  static std::string Sql(const std::vector<std::string>& ids) {
    std::string sql;
    for (const std::string& id : ids) {
      sql += "UPDATE containers SET v = v + 1 WHERE id = '" + id + "'; SELECT pg_sleep(0.3); ";
    }
    return sql;
  }
  std::vector<std::string> ids_;
  bool name_rows_;
};

}  // namespace

// One tenant's advisory lock, held by a stalled transaction elsewhere past
// lock_timeout, fails only the jobs that needed it: the other tenants' jobs
// and the jobs that need no lock, in the same group, commit.
TEST_CASE("pg_writer: a lock held elsewhere fails only the jobs that need it") {
  store::PgWriterOptions options;
  options.lock_timeout_ms = 300;
  Fixture f(options);
  std::unique_ptr<store::PgConn> peer;
  REQUIRE(store::PgConn::Connect(f.db.uri, "stalled peer", &peer).ok());
  REQUIRE(peer->Exec("BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('acme', 0))").ok());

  std::promise<store::Status> acme_done, other_done, plain_done;
  f.Hold();
  f.Submit(std::make_unique<LockingJob>("acme", "INSERT INTO t VALUES (1)", &acme_done));
  f.Submit(std::make_unique<LockingJob>("other", "INSERT INTO t VALUES (2)", &other_done));
  f.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (3)", &plain_done));
  CHECK(acme_done.get_future().get().IsBusy());
  CHECK(other_done.get_future().get().ok());
  CHECK(plain_done.get_future().get().ok());
  REQUIRE(peer->Exec("COMMIT").ok());
  CHECK(f.ValuesAfterStop() == "2,3");
}

// Two writers (two nodes) change the same two rows in opposite orders. Rows
// a group names (PgJob::AddRowLocks) are locked up front in one order, so
// neither waits on the other in a cycle: no deadlock, no group run again.
// Named not, the same jobs deadlock (PostgreSQL breaks the cycle after
// deadlock_timeout, failing one): the hazard is real.
TEST_CASE("pg_writer: groups that name their rows lock them in one order and never deadlock") {
  Db db(/*table=*/false);
  const std::string& uri = db.uri;
  testing::PgServer::Query(uri,
                           "CREATE TABLE containers (id text PRIMARY KEY, v int);"
                           "CREATE TABLE sessions (session_id text, container_id text);"
                           "INSERT INTO containers VALUES ('a', 0), ('b', 0)");
  for (const bool name_rows : {true, false}) {
    INFO("rows named: " << name_rows);
    store::PgWriter one(uri, "node one"), two(uri, "node two");
    one.Start();
    two.Start();
    std::promise<store::Status> one_done, two_done;
    REQUIRE(one.Submit(std::make_unique<RowsJob>(std::vector<std::string>{"a", "b"}, name_rows,
                                                 &one_done)));
    REQUIRE(two.Submit(std::make_unique<RowsJob>(std::vector<std::string>{"b", "a"}, name_rows,
                                                 &two_done)));
    const store::Status s1 = one_done.get_future().get(), s2 = two_done.get_future().get();
    one.Stop();
    two.Stop();
    const uint64_t reruns = one.stats().groups_rerun.load() + two.stats().groups_rerun.load();
    if (name_rows) {
      CHECK(s1.ok());
      CHECK(s2.ok());
      CHECK(reruns == 0);
    } else {
      // The cycle broke one job (run again under a savepoint, it then went
      // through or failed Busy).
      CHECK(reruns + (s1.ok() ? 0 : 1) + (s2.ok() ? 0 : 1) >= 1);
    }
  }
}

// An idle writer asks the database its time: the offset is measured
// (one machine: near 0), and a database that goes away makes the writer
// failing without any write; back, it is not.
TEST_CASE("pg_writer: the idle probe measures the clock and finds a lost database") {
  store::PgWriterOptions options;
  options.probe_interval_ms = 100;
  Fixture f(options);
  const store::WriterStats& stats = f.writer.stats();
  const auto wait_for = [](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  };
  REQUIRE(wait_for([&] { return stats.clock_offset_known.load() == 1; }));
  const int64_t offset = stats.clock_offset_ms.load();
  CHECK(offset > -1000);
  CHECK(offset < 1000);
  CHECK(stats.failing.load() == 0);
  f.db.server.Stop();
  CHECK(wait_for([&] { return stats.failing.load() == 1; }));
  f.db.server.Start();
  CHECK(wait_for([&] { return stats.failing.load() == 0; }));
  f.writer.Stop();
}

// Stop against a database that answers nothing is bounded: the jobs left
// are answered unwritten, not run one connect timeout after another (20 jobs
// of 5 s each were 100 s).
TEST_CASE("pg_writer: Stop against an unreachable database ends within its timeout") {
  // A port that accepts connections and never answers (a frozen host).
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(fd, 64) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string uri =
      "postgresql://edgealloc@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x";

  store::PgWriterOptions options;
  options.stop_timeout_ms = 1500;
  options.max_group_jobs = 1;  // one connect attempt a job, as a long queue would take
  store::PgWriter writer(uri, "pg_writer_test", options);
  writer.Start();
  constexpr int kJobs = 20;
  std::vector<std::promise<store::Status>> done(kJobs);
  for (auto& d : done) REQUIRE(writer.Submit(std::make_unique<SqlJob>("SELECT 1", &d)));
  const auto t0 = std::chrono::steady_clock::now();
  writer.Stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  // One connect timeout (5 s) may be under way at the deadline; 20 of them
  // one after another would be 100 s.
  CHECK(took < std::chrono::seconds(12));
  for (auto& d : done) CHECK_FALSE(d.get_future().get().ok());
  // Answered unwritten: by the stop's deadline, or at once once the writer
  // found the database down (no connect to be had: the queue is not made to
  // wait one connect timeout a job).
  CHECK(writer.stats().jobs_failed.load() == static_cast<uint64_t>(kJobs));
  CHECK(writer.down());
  ::close(fd);
}
