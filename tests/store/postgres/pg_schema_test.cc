// The PostgreSQL schema's migrations from version 8 on (the older ones:
// postgres_storage_test.cc), each from a database as the older node left it.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "store/postgres/postgres_storage.h"
#include "store/postgres/schema_sql.h"
#include "tests/store/history_columns.h"
#include "tests/support/await.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"

namespace {

using testing::PgServer;

std::unique_ptr<store::PostgresStorage> Open(const std::string& uri) {
  return testing::OpenPgOrDie(uri, 1, "pg_schema_test");
}

// Publishes once the node's writer has measured its offset from the
// database's clock (Busy until then), polling for at most 10 s.
bool PublishHeard(store::PostgresStorage* storage) {
  const int64_t until = base::NowMs() + 10000;
  while (!storage->PublishHeardUntil({base::NowMs()}, 1000).ok()) {
    if (base::NowMs() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string SchemaVersion(const std::string& uri) {
  return PgServer::Query(uri, "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'");
}

// Sets `uri`'s schema version to `from`, opens it as a node of the current
// version, and checks that it upgraded the schema with the containers' `rows`
// (a query of them) unchanged.
std::unique_ptr<store::PostgresStorage> OpenUpgradedKeeping(const std::string& uri, int from,
                                                            const std::string& rows) {
  PgServer::Query(uri, "UPDATE edgealloc_meta SET value = '" + std::to_string(from) +
                           "' WHERE key = 'schema_version'");
  const std::string before = PgServer::Query(uri, rows);
  auto storage = Open(uri);
  CHECK(SchemaVersion(uri) == std::to_string(store::pgsql::kSchemaVersion));
  CHECK(PgServer::Query(uri, rows) == before);
  return storage;
}

}  // namespace

// Version 8: when the reaper judged a container dead. Every row is kept as
// it was, died_at_ms NULL, and a dead container found so comes back with
// its next `ready`, as before.
TEST_CASE("pg schema: version 8 adds died_at_ms to a version 7 database, every row kept") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  {
    auto storage = Open(uri);
    store::ContainerResult r = testing::Await<store::ContainerResult>([&](auto cb) {
      storage->Register(
          {{"v7-1", "weur", "chrome", 10, "{}"}, {"v7-2", "weur", "chrome", 20, "{}"}}, cb);
    });
    REQUIRE(r.outcome == store::Outcome::kOk);
  }
  // As a version 7 node left it, v7-2 dead.
  PgServer::Query(uri, "ALTER TABLE containers DROP COLUMN died_at_ms");
  PgServer::Query(uri, "UPDATE containers SET status = 'dead' WHERE id = 'v7-2'");
  auto storage = OpenUpgradedKeeping(
      uri, 7,
      "SELECT string_agg(id || status || last_heartbeat_ms || generation || lane_hash || "
      "latency_ms, ',' ORDER BY id) FROM containers");
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM containers WHERE died_at_ms IS NULL") == "2");
  int partition = -1;
  REQUIRE(storage->PartitionOf("v7-2", &partition).ok());
  store::HeartbeatWriteResult result;
  REQUIRE(storage
              ->WriteHeartbeats(partition,
                                {{"v7-2", base::NowMs(), std::nullopt, std::nullopt,
                                  store::ReportedState::kReady}},
                                &result)
              .ok());
  CHECK(storage->GetContainer("v7-2").container.status == "available");
}

// Version 9 added db_clock_shifts, 10 node_tenant_limits, 11
// node_heard_until (the nodes' published "heard until", which every sweep
// reads): a database as a version 9 or 10 node left it gets what it lacks,
// every row kept, and the sweep that reads the new table works on it.
TEST_CASE("pg schema: a version 9 or 10 database is brought to the current version") {
  const int from = GENERATE(9, 10);
  CAPTURE(from);
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  {
    auto storage = Open(uri);
    store::ContainerResult r = testing::Await<store::ContainerResult>([&](auto cb) {
      storage->Register({{"old-1", "weur", "chrome", 10, "{}"}}, cb);
    });
    REQUIRE(r.outcome == store::Outcome::kOk);
    REQUIRE(PublishHeard(storage.get()));
  }
  // As the older node left it: without the tables of the later versions.
  PgServer::Query(uri, "DROP TABLE node_heard_until");
  if (from < 10) PgServer::Query(uri, "DROP TABLE node_tenant_limits");
  PgServer::Query(uri, "UPDATE db_clock_shifts SET shifts = 2, shifted_ms = 1500");
  auto storage = OpenUpgradedKeeping(
      uri, from,
      "SELECT string_agg(id || status || last_heartbeat_ms || lane_hash, ',' ORDER BY id) "
      "FROM containers");
  CHECK(store::pgsql::kSchemaVersion == 11);
  CHECK(PgServer::Query(uri, "SELECT shifts || '/' || shifted_ms FROM db_clock_shifts") ==
        "2/1500");
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM node_tenant_limits") == "0");
  REQUIRE(PublishHeard(storage.get()));
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM node_heard_until") == "1");
  store::SilenceSweep sweep;
  const int64_t cutoff = base::NowMs() - 60000;
  REQUIRE(storage
              ->SweepSilentContainers(
                  0, [cutoff] { return cutoff; }, store::HeldPools{}, 100, &sweep)
              .ok());
  CHECK(sweep.dead.empty());
}

// A session column added to the description (store/row_columns.h) and not
// to the history's table or its trigger's function would be lost when its
// session ends.
TEST_CASE("pg schema: the history table and its trigger's function carry every session column") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  Open(uri);
  const std::string table =
      PgServer::Query(uri,
                      "SELECT string_agg(column_name, ' ') FROM information_schema.columns "
                      "WHERE table_schema = current_schema() AND table_name = 'session_history'");
  INFO("session_history: " << table);
  CHECK(testing::SessionColumnsNotIn(table) == std::vector<std::string>{});
  const std::string function = PgServer::Query(
      uri, "SELECT prosrc FROM pg_proc WHERE proname = 'edgealloc_keep_ended_session'");
  INFO("edgealloc_keep_ended_session: " << function);
  CHECK(testing::HistoryInsertProblems(function) == std::vector<std::string>{});
  // Both triggers that keep an ended session run that function.
  CHECK(PgServer::Query(uri,
                        "SELECT string_agg(tgname, ' ' ORDER BY tgname) FROM pg_trigger "
                        "WHERE tgfoid = 'edgealloc_keep_ended_session'::regproc") ==
        "containers_session_deleted containers_session_ended");
}
