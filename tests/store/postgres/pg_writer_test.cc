#include "store/postgres/pg_writer.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <thread>
#include <future>
#include <memory>
#include <optional>
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

}  // namespace

TEST_CASE("pg_writer: a failing job in a group is undone alone, the others commit") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  testing::PgServer::Query(uri, "CREATE TABLE t (v int PRIMARY KEY)");
  store::PgWriter writer(uri, "pg_writer_test");
  writer.Start();
  // A slow first job holds the writer, so the next three are one group.
  std::promise<store::Status> slow_done, a_done, b_done, c_done;
  auto slow = std::make_unique<SqlJob>("SELECT pg_sleep(0.3)", &slow_done);
  auto a = std::make_unique<SqlJob>("INSERT INTO t VALUES (1)", &a_done);
  // Writes, then fails: its write must not survive.
  auto b = std::make_unique<SqlJob>("INSERT INTO t VALUES (2); SELECT 1/0", &b_done);
  auto c = std::make_unique<SqlJob>("INSERT INTO t VALUES (3)", &c_done);
  REQUIRE(writer.Submit(std::move(slow)));
  REQUIRE(writer.Submit(std::move(a)));
  REQUIRE(writer.Submit(std::move(b)));
  REQUIRE(writer.Submit(std::move(c)));
  CHECK(slow_done.get_future().get().ok());
  CHECK(a_done.get_future().get().ok());
  store::Status b_status = b_done.get_future().get();
  CHECK_FALSE(b_status.ok());
  CHECK_THAT(b_status.message(), Catch::Contains("division by zero"));
  CHECK(c_done.get_future().get().ok());
  writer.Stop();
  CHECK(testing::PgServer::Query(uri, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t") ==
        "1,3");
  // The failed job is counted; the others were answered Ok above.
  CHECK(writer.stats().jobs_failed.load() == 1);
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
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
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
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  store::PgWriterOptions options;
  options.idle_in_transaction_timeout_ms = 300;
  store::PgWriter writer(uri, "pg_writer_test", options);
  writer.Start();
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
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  testing::PgServer::Query(uri, "CREATE TABLE t (v int PRIMARY KEY)");
  store::PgWriter writer(uri, "pg_writer_test");
  writer.Start();
  std::promise<store::Status> slow_done;
  REQUIRE(writer.Submit(std::make_unique<SqlJob>("SELECT pg_sleep(0.3)", &slow_done)));
  std::promise<store::Status> done[3];
  std::string returned[3];
  for (int i = 0; i < 3; ++i) {
    REQUIRE(writer.Submit(std::make_unique<InsertingJob>(i + 1, std::vector<int>{i + 1, 10 + i},
                                                         &done[i], &returned[i])));
  }
  CHECK(slow_done.get_future().get().ok());
  for (int i = 0; i < 3; ++i) {
    CHECK(done[i].get_future().get().ok());
    CHECK(returned[i] == std::to_string(i + 1));
  }
  writer.Stop();
  CHECK(testing::PgServer::Query(uri, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t") ==
        "1,2,3,10,11,12");
  CHECK(writer.stats().groups_rerun.load() == 0);
}

// A job whose Apply does not run its declared first statement first: what
// the pipeline ran ahead is rolled back and the group runs again job by
// job, so the job's statements end as it ran them, once each.
TEST_CASE("pg_writer: a first statement run out of order makes the group run again") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  testing::PgServer::Query(uri, "CREATE TABLE t (v int PRIMARY KEY)");
  store::PgWriter writer(uri, "pg_writer_test");
  writer.Start();
  std::promise<store::Status> slow_done, good_done, odd_done;
  std::string good_returned, odd_returned;
  REQUIRE(writer.Submit(std::make_unique<SqlJob>("SELECT pg_sleep(0.3)", &slow_done)));
  REQUIRE(writer.Submit(
      std::make_unique<InsertingJob>(1, std::vector<int>{1}, &good_done, &good_returned)));
  // Declares 10 first but inserts 20 before it.
  REQUIRE(writer.Submit(
      std::make_unique<InsertingJob>(10, std::vector<int>{20, 10}, &odd_done, &odd_returned)));
  CHECK(slow_done.get_future().get().ok());
  CHECK(good_done.get_future().get().ok());
  CHECK(odd_done.get_future().get().ok());
  CHECK(odd_returned == "20");
  writer.Stop();
  CHECK(testing::PgServer::Query(uri, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t") ==
        "1,10,20");
  CHECK(writer.stats().groups_rerun.load() == 1);
}
