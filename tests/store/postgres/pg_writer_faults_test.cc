// The PostgreSQL writer against faults of its own thread: exceptions
// thrown where it begins a group or probes (through its seams: a job's
// first statement, the clock warning), and a COMMIT whose wait for the
// synchronous standby was cancelled.
#include "store/postgres/pg_writer.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/support/pg_server.h"

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

template <typename Done>
bool WaitFor(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
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
