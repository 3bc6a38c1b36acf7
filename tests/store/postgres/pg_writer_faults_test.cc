// The PostgreSQL writer against faults of its own thread: exceptions
// thrown where it begins a group or probes (through its seams: a job's
// first statement, the clock warning), and a COMMIT whose wait for the
// synchronous standby was cancelled.
#include "store/postgres/pg_writer.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/support/pg_server.h"
#include "tests/support/eventually.h"

namespace {

// A job that runs `sql` and reports its outcome; with `first_throws`, its
// First() throws as a result accessor out of range would.
class SqlJob : public store::PgJob {
 public:
  SqlJob(std::string sql, std::promise<store::Status>* done, bool first_throws = false)
      : sql_(std::move(sql)), done_(done), first_throws_(first_throws) {}
  store::Status Apply(store::PgConn* conn) override { return conn->Exec(sql_); }
  void Done(store::Status status) override { done_->set_value(std::move(status)); }
  std::optional<store::PgStatement> First() const override {
    if (first_throws_) throw std::out_of_range("row 0 of an empty result");
    return std::nullopt;
  }

 private:
  std::string sql_;
  std::promise<store::Status>* done_;
  bool first_throws_;
};

// Holds the writer until `release` is set, having said it began: the jobs
// submitted meanwhile make the next group.
class HoldJob : public store::PgJob {
 public:
  HoldJob(std::promise<void>* began, std::shared_future<void> release)
      : began_(began), release_(std::move(release)) {}
  store::Status Apply(store::PgConn*) override {
    began_->set_value();
    release_.wait();
    return store::Status::Ok();
  }
  void Done(store::Status) override {}

 private:
  std::promise<void>* began_;
  std::shared_future<void> release_;
};

// Runs `sql` as one job and returns its answer.
store::Status Run(store::PgWriter* writer, const std::string& sql) {
  std::promise<store::Status> done;
  REQUIRE(writer->Submit(std::make_unique<SqlJob>(sql, &done)));
  return done.get_future().get();
}

bool WaitFor(const std::function<bool()>& done) {
  return testing::Eventually(done, std::chrono::seconds(30));
}

}  // namespace

// A job's First() throws while the writer builds the group's pipeline: the
// group's jobs fail with the exception's text, nothing of them is written,
// and the next group commits (before, std::terminate ended the process).
TEST_CASE("pg_writer faults: an exception while a group begins fails its jobs, not the process") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  testing::PgServer::Query(uri, "CREATE TABLE t (v int PRIMARY KEY)");
  store::PgWriter writer(uri, "pg_writer_faults_test");
  writer.Start();
  std::promise<void> began, release;
  std::promise<store::Status> thrower, bystander;
  REQUIRE(writer.Submit(std::make_unique<HoldJob>(&began, release.get_future().share())));
  began.get_future().wait();
  REQUIRE(writer.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (1)", &thrower, true)));
  REQUIRE(writer.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (2)", &bystander)));
  release.set_value();
  const store::Status s = thrower.get_future().get();
  CHECK(s.IsIOError());
  CHECK_THAT(s.message(), Catch::Contains("row 0 of an empty result"));
  CHECK_FALSE(bystander.get_future().get().ok());
  CHECK(writer.stats().writer_exceptions.load() == 1);
  CHECK(Run(&writer, "INSERT INTO t VALUES (3)").ok());
  CHECK(testing::PgServer::Query(uri, "SELECT string_agg(v::text, ',' ORDER BY v) FROM t") == "3");
}

// The clock warning (a log call: spdlog throws on a bad format or a failing
// sink) throws, once at the connect a group begins with and once in the
// idle probe: each is caught, the connection made again, and the writer
// serves.
TEST_CASE("pg_writer faults: a warning that throws at connect or in the probe is caught") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  const bool in_probe = GENERATE(false, true);
  INFO("in the probe: " << in_probe);
  store::PgWriterOptions options;
  options.max_clock_offset_ms = -1;  // every offset is beyond it: the warning comes at once
  options.probe_interval_ms = in_probe ? 50 : 60000;
  options.warn = [](const std::string&) { throw std::runtime_error("the log's sink failed"); };
  store::PgWriter writer(uri, "pg_writer_faults_test", options);
  writer.Start();
  if (in_probe) {
    CHECK(WaitFor([&] { return writer.stats().writer_exceptions.load() == 1; }));
  } else {
    const store::Status s = Run(&writer, "SELECT 1");
    CHECK_THAT(s.message(), Catch::Contains("the log's sink failed"));
    CHECK(writer.stats().writer_exceptions.load() == 1);
  }
  // Warned once (it is not repeated while the offset stays): the writer
  // connects again and serves.
  CHECK(Run(&writer, "SELECT 1").ok());
}

// synchronous_standby_names names a standby that is not there, so every
// COMMIT waits for it; pg_cancel_backend on the waiting writer ends the
// wait, and PostgreSQL answers the COMMIT with success and a WARNING
// ("canceling wait for synchronous replication due to user request"): the
// group is committed on the primary alone. Before, its jobs were told Ok,
// durable; they are told the outcome is unknown (as a cut COMMIT), and the
// row is indeed there on the primary.
TEST_CASE("pg_writer faults: a COMMIT whose synchronous wait was cancelled is outcome unknown") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  testing::PgServer::Query(uri, "CREATE TABLE t (v int)");
  // Set once the setup is written (it would wait too); sessions that start
  // after the reload, the writer's, wait for the standby at each COMMIT.
  testing::PgServer::Query(uri, "ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'");
  testing::PgServer::Query(uri, "SELECT pg_reload_conf()");
  REQUIRE(WaitFor([&] {
    return testing::PgServer::Query(uri, "SHOW synchronous_standby_names") == "absent_standby";
  }));
  store::PgWriterOptions options;
  options.statement_timeout_ms = 120000;  // only the cancel ends the wait
  options.io_timeout_ms = 120000;
  store::PgWriter writer(uri, "pg_writer_sync_test", options);
  writer.Start();
  std::promise<store::Status> done;
  REQUIRE(writer.Submit(std::make_unique<SqlJob>("INSERT INTO t VALUES (7)", &done)));
  const std::string waiting =
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_writer_sync_test' "
      "AND wait_event = 'SyncRep'";
  std::string pid;
  REQUIRE(WaitFor([&] { return !(pid = testing::PgServer::Query(uri, waiting)).empty(); }));
  CHECK(testing::PgServer::Query(uri, "SELECT pg_cancel_backend(" + pid + ")") == "t");
  const store::Status s = done.get_future().get();
  INFO(s.ToString());
  CHECK(store::IsCommitOutcomeUnknown(s));
  CHECK_THAT(s.message(), Catch::Contains("may not be replicated"));
  CHECK(writer.stats().commits_not_replicated.load() == 1);
  // Committed on the primary: "unknown" is the truth, not "failed".
  CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM t WHERE v = 7") == "1");
  // The connection is still the writer's: a write that asks for no standby
  // commits Ok on it.
  CHECK(Run(&writer, "SET LOCAL synchronous_commit = local; INSERT INTO t VALUES (8)").ok());
}
