#include "store/postgres/pg_writer.h"

#include <catch2/catch.hpp>
#include <future>
#include <memory>
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

TEST_CASE("pg_writer: a failing job in a group is undone alone; the others commit") {
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
