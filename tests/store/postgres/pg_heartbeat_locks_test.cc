// A heartbeat lane on PostgreSQL against a row an outside transaction keeps
// locked (an operator's open SELECT ... FOR UPDATE): the batch writes the
// rest at once, skips that row, keeps it, and writes it once the lock goes.
#include "store/postgres/postgres_storage.h"

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/postgres/pg.h"
#include "tests/support/pg_server.h"
#include "tests/support/requests.h"

namespace {

store::HeartbeatRow Row(const std::string& id) {
  store::HeartbeatRow row;
  row.container_id = id;
  row.accepted_ms = base::NowMs();  // the liveness stamp (store/report_counts_sql.h)
  row.state = store::ReportedState::kReady;
  return row;
}

// Which of c0..c4 have a heartbeat stored since the test set them all to 1.
std::string Heard(const std::string& uri) {
  return testing::PgServer::Query(uri, "SELECT string_agg(id, ',' ORDER BY id) FROM containers "
                                       "WHERE last_heartbeat_ms > 1");
}

}  // namespace

TEST_CASE("pg heartbeat locks: a row locked elsewhere is skipped, kept, and written later") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  store::StorageOptions options;
  options.db = uri;
  options.pg_writers = 1;
  options.program = "pg_heartbeat_locks_test";
  std::unique_ptr<store::PostgresStorage> storage;
  REQUIRE(store::PostgresStorage::Open(options, &storage).ok());
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 5; ++i) specs.push_back(testing::Spec("c" + std::to_string(i), "weur"));
  std::promise<store::ContainerResult> registered;
  storage->Register(specs, [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);
  testing::PgServer::Query(uri, "UPDATE containers SET last_heartbeat_ms = 1");

  std::unique_ptr<store::PgConn> outside;
  REQUIRE(store::PgConn::Connect(uri, "outside", &outside).ok());
  REQUIRE(outside->Exec("BEGIN; SELECT 1 FROM containers WHERE id = 'c0' FOR UPDATE").ok());

  // Waited for, the lock failed the whole batch after lock_timeout (Busy),
  // and the lane retried it, and failed again, as long as it was held.
  store::HeartbeatWriteResult result;
  const std::vector<store::HeartbeatRow> batch = {Row("c0"), Row("c1"), Row("c2"), Row("nope"),
                                                  Row("c3"), Row("c4")};
  store::Status s = storage->WriteHeartbeats(0, batch, &result);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(result.written == 4);
  CHECK(result.skipped == std::vector<size_t>{0});
  CHECK(result.unknown == std::vector<size_t>{3});
  CHECK(Heard(uri) == "c1,c2,c3,c4");
  const store::WriterStats& stats = storage->writer_stats(0);
  CHECK(stats.heartbeat_rows_skipped.load() == 1);
  CHECK(stats.heartbeat_rows_deferred.load() == 1);

  // Still locked: the next batch writes its own row and skips c0 again; c0
  // is kept once, not once a report.
  REQUIRE(storage->WriteHeartbeats(0, {Row("c1")}, &result).ok());
  CHECK(result.written == 1);
  CHECK(result.skipped.empty());  // c0 was not the caller's row this time
  CHECK(stats.heartbeat_rows_skipped.load() == 2);
  CHECK(stats.heartbeat_rows_deferred.load() == 1);
  CHECK(Heard(uri) == "c1,c2,c3,c4");

  // The lock goes. With no heartbeat after it, the silence sweep writes the
  // kept one before it judges: c0, whose stored heartbeat is decades old,
  // is not taken for dead.
  REQUIRE(outside->Exec("COMMIT").ok());
  store::SilenceSweep sweep;
  const int64_t cutoff = base::NowMs() - 60000;
  REQUIRE(storage->SweepSilentContainers(0, [cutoff] { return cutoff; }, store::HeldPools{}, 100, &sweep).ok());
  CHECK(sweep.dead.empty());
  CHECK(Heard(uri) == "c0,c1,c2,c3,c4");
  CHECK(stats.heartbeat_rows_deferred.load() == 0);
  CHECK(testing::PgServer::Query(uri, "SELECT status FROM containers WHERE id = 'c0'") ==
        "available");
}
