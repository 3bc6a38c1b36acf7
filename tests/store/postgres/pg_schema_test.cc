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
  // (An older node had no view of the containers.)
  PgServer::Query(uri, "DROP VIEW container_rows");
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
  CHECK(store::pgsql::kSchemaVersion == 16);
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

// Version 12: containers' attributes and their table. A database as a
// version 11 node left it, with a live session (and its idempotency key)
// and an ended one, keeps every row; its containers have no attributes
// until registered with some, and then a selector finds them.
TEST_CASE("pg schema: version 12 adds attributes to a version 11 database, sessions, history "
          "and keys kept") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  store::Caller t1;
  t1.tenant = "t1";
  store::Session live;
  {
    auto storage = Open(uri);
    store::ContainerResult r = testing::Await<store::ContainerResult>([&](auto cb) {
      storage->Register(
          {{"v11-1", "weur", "chrome", 10, "{}"}, {"v11-2", "weur", "chrome", 20, "{}"}}, cb);
    });
    REQUIRE(r.outcome == store::Outcome::kOk);
    for (const std::string key : {"k-ended", "k-live"}) {
      store::ClaimRequest req;
      req.region = "weur";
      req.pool = "chrome";
      req.lease_ms = 600000;
      req.caller = t1;
      req.idempotency_key = key;
      auto c = testing::Await<store::SessionResult>([&](auto cb) { storage->Claim(req, cb); });
      REQUIRE(c.outcome == store::Outcome::kOk);
      live = c.session;
      if (key == "k-live") break;
      auto released = testing::Await<store::SessionResult>([&](auto cb) {
        storage->Release(t1, c.session.session_id, c.session.token, cb);
      });
      REQUIRE(released.outcome == store::Outcome::kOk);
    }
  }
  // As a version 11 node left it, but for its sessions, which are where
  // the current version keeps them (pg_schema_sessions_test moves a version
  // 11 node's). (An older node had no view of the containers.)
  PgServer::Query(uri, "DROP VIEW container_rows");
  PgServer::Query(uri, "DROP TABLE container_attributes");
  PgServer::Query(uri, "ALTER TABLE containers DROP COLUMN attributes");
  auto storage = OpenUpgradedKeeping(
      uri, 11,
      "SELECT string_agg(c.id || c.status || c.generation || COALESCE(s.session_id, '-') || "
      "COALESCE(s.idempotency_key, '-'), ',' ORDER BY c.id) FROM containers c "
      "LEFT JOIN sessions s ON s.container_id = c.id");
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM session_history") == "1");
  CHECK(storage->GetSession(t1, live.session_id).outcome == store::Outcome::kOk);
  CHECK(storage->GetContainer("v11-1").container.attributes == "{}");
  // The free one gets an attribute, and a selector finds it.
  const std::string free_id = live.container_id == "v11-1" ? "v11-2" : "v11-1";
  store::ContainerSpec spec{free_id, "weur", "chrome", 10, "{}"};
  spec.attributes = R"({"gpu":"a100"})";
  auto registered = testing::Await<store::ContainerResult>(
      [&](auto cb) { storage->Register({spec}, cb); });
  REQUIRE(registered.outcome == store::Outcome::kOk);
  store::ClaimRequest req;
  req.region = "weur";
  req.pool = "chrome";
  req.lease_ms = 60000;
  req.caller.tenant = "t2";
  req.selector = {{"gpu", {"a100"}}};
  auto c = testing::Await<store::SessionResult>([&](auto cb) { storage->Claim(req, cb); });
  REQUIRE(c.outcome == store::Outcome::kOk);
  CHECK(c.session.container_id == free_id);
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
      uri, "SELECT prosrc FROM pg_proc WHERE proname = 'edgealloc_keep_ended_sessions'");
  INFO("edgealloc_keep_ended_sessions: " << function);
  CHECK(testing::HistoryInsertProblems(function) == std::vector<std::string>{});
  // Both triggers that keep an ended session run that function.
  CHECK(PgServer::Query(uri,
                        "SELECT string_agg(tgname, ' ' ORDER BY tgname) FROM pg_trigger "
                        "WHERE tgfoid = 'edgealloc_keep_ended_sessions'::regproc") ==
        "containers_sessions_deleted containers_sessions_ended");
}

// Version 14: the event log. A version 13 database (no events, no
// triggers) keeps its rows, and its changes write events from then on.
TEST_CASE("pg schema: version 14 adds the event log to a version 13 database") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  {
    auto storage = Open(uri);
    store::ContainerResult r = testing::Await<store::ContainerResult>(
        [&](auto cb) { storage->Register({{"v13-1", "weur", "chrome", 10, "{}"}}, cb); });
    REQUIRE(r.outcome == store::Outcome::kOk);
  }
  PgServer::Query(uri, "DROP FUNCTION edgealloc_write_event() CASCADE");
  PgServer::Query(uri, "DROP FUNCTION edgealloc_event_commit_order() CASCADE");
  PgServer::Query(uri, "DROP TABLE events");
  PgServer::Query(uri, "DROP TABLE event_floor");
  PgServer::Query(uri, "DROP SEQUENCE edgealloc_event_seq");
  auto storage = OpenUpgradedKeeping(
      uri, 13, "SELECT string_agg(id || status || generation, ',' ORDER BY id) FROM containers");
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM events") == "0");
  REQUIRE(testing::Await<store::ContainerResult>([&](auto cb) { storage->Drain("v13-1", cb); })
              .outcome == store::Outcome::kOk);
  CHECK(PgServer::Query(uri, "SELECT string_agg(type, ',' ORDER BY seq) FROM events") ==
        "container.drained");
}

// Version 15: webhook delivery cursors. A version 14 database gains the
// table, and one node at a time holds a tenant's lease.
TEST_CASE("pg schema: version 15 adds webhook cursors to a version 14 database") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  { auto storage = Open(uri); }
  PgServer::Query(uri, "DROP TABLE webhook_cursors");
  auto storage = OpenUpgradedKeeping(uri, 14, "SELECT count(*) FROM containers");
  bool held = false;
  std::string cursor = "unset";
  REQUIRE(storage->LeaseWebhook("acme", "node-a", 60000, &held, &cursor).ok());
  CHECK(held);
  CHECK(cursor.empty());
  REQUIRE(storage->AckWebhook("acme", "node-a", "41", 60000, &held).ok());
  CHECK(held);
  // Another node finds it held; the holder's lease lapsed, it takes it.
  REQUIRE(storage->LeaseWebhook("acme", "node-b", 60000, &held, &cursor).ok());
  CHECK_FALSE(held);
  REQUIRE(storage->AckWebhook("acme", "node-b", "99", 60000, &held).ok());
  CHECK_FALSE(held);
  REQUIRE(storage->AckWebhook("acme", "node-a", "41", 0, &held).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(storage->LeaseWebhook("acme", "node-b", 60000, &held, &cursor).ok());
  CHECK(held);
  CHECK(cursor == "41");
  REQUIRE(storage->AckWebhook("acme", "node-a", "50", 60000, &held).ok());
  CHECK_FALSE(held);
}
