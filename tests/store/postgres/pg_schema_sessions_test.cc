// Version 13 of the PostgreSQL schema (store/postgres/schema_sql.h): sessions
// move out of the containers' rows into a table of their own, and
// containers gain slots. A database as a version 11 node left it (its
// containers table holding the sessions, its history without slots), with
// live sessions, an idempotency key and an ended session, is opened by a
// node of this version: nothing is lost, and every session works on.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "base/clock.h"
#include "store/postgres/postgres_storage.h"
#include "store/postgres/schema_sql.h"
#include "store/postgres/selector_sql.h"
#include "store/session_id.h"
#include "tests/store/migrated_sessions.h"
#include "tests/support/await.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using testing::Await;
using testing::PgServer;
using testing::Tenant;

// What a version 11 node's schema held of the sessions: the containers
// table with the session's columns, its unique key index, and the history
// (as its migration text made them; the tables no session touches are made
// by the new node's migration as they were).
constexpr char kVersion11Sessions[] = R"sql(
CREATE TABLE edgealloc_meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO edgealloc_meta VALUES ('schema_version', '11');
CREATE SEQUENCE edgealloc_tokens START 100;
CREATE TABLE containers (
  id text PRIMARY KEY, region text NOT NULL, pool text NOT NULL,
  status text NOT NULL CHECK (status IN ('available', 'picked', 'draining', 'dead')),
  latency_ms bigint NOT NULL DEFAULT 0, data text NOT NULL DEFAULT '{}',
  last_heartbeat_ms bigint NOT NULL DEFAULT 0, reported_ts_ms bigint NOT NULL DEFAULT 0,
  load double precision, generation bigint NOT NULL,
  drain_requested boolean NOT NULL DEFAULT false, dead_reported boolean NOT NULL DEFAULT false,
  session_id text UNIQUE, tenant text, idempotency_key text, lease_expires_at_ms bigint,
  claimed_at_ms bigint, lane_hash integer NOT NULL DEFAULT 0, labels text,
  drain_reported boolean NOT NULL DEFAULT false, end_reason text, died_at_ms bigint);
CREATE UNIQUE INDEX containers_idempotency ON containers (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX containers_session_c ON containers (session_id COLLATE "C")
  WHERE session_id IS NOT NULL;
CREATE TABLE session_history (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_id text COLLATE "C" NOT NULL UNIQUE, id text NOT NULL, region text NOT NULL,
  pool text NOT NULL, generation bigint NOT NULL, lease_expires_at_ms bigint, data text,
  labels text, tenant text, end_reason text NOT NULL, ended_at_ms bigint NOT NULL);
)sql";

std::string NewId() {
  std::string id;
  REQUIRE(store::NewSessionId(0, &id).ok());
  return id;
}

}  // namespace

TEST_CASE("pg schema: version 13 moves a version 11 database's live sessions, keys and history "
          "into sessions, and every one works on") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  const std::string keyed = NewId(), plain = NewId(), ended = NewId();
  const std::string now = std::to_string(base::NowMs());
  const int64_t lease_end_ms = base::NowMs() + 3600000;
  const std::string lease_end = std::to_string(lease_end_ms);
  PgServer::Query(uri, kVersion11Sessions);
  PgServer::Query(uri,
                  "INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, generation, "
                  "session_id, tenant, idempotency_key, lease_expires_at_ms, claimed_at_ms, labels) "
                  "VALUES ('c-1', 'weur', 'p', 'picked', " + now + ", 7, '" + keyed +
                      "', 't1', 'k1', " + lease_end + ", 1000, '{\"job\":\"a\"}'), "
                      "('c-2', 'weur', 'p', 'picked', " + now + ", 3, '" + plain + "', 't2', "
                      "NULL, " + lease_end + ", 1000, NULL), "
                      "('c-3', 'weur', 'p', 'available', " + now + ", 5, NULL, NULL, NULL, NULL, "
                      "NULL, NULL)");
  PgServer::Query(uri, "INSERT INTO session_history (session_id, id, region, pool, generation, "
                       "tenant, end_reason, ended_at_ms) VALUES ('" + ended +
                           "', 'c-3', 'weur', 'p', 4, 't1', 'released', " + now + ")");

  auto s = testing::OpenPgOrDie(uri, 1, "pg_schema_sessions_test");
  CHECK(PgServer::Query(uri, "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'") ==
        std::to_string(store::pgsql::kSchemaVersion));
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM sessions") == "2");
  CHECK(PgServer::Query(uri, "SELECT string_agg(id || ':' || status || ':' || slots || ':' || "
                             "slots_used || ':' || slot_map, ',' ORDER BY id) FROM containers") ==
        "c-1:picked:1:1:1,c-2:picked:1:1:1,c-3:available:1:0:0");

  testing::CheckMigratedSessionsWork(
      s.get(), {.keyed = keyed, .plain = plain, .ended = ended, .lease_expires_at_ms = lease_end_ms,
                .min_new_token = 100});
}

// A version 12 database (attributes, the step before) keeps its attributes
// and their index rows through version 13, and a selector matches them.
TEST_CASE("pg schema: version 13 keeps a version 12 database's attributes, and selectors match "
          "them") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  const std::string held = NewId();
  const std::string now = std::to_string(base::NowMs());
  const std::string lease_end = std::to_string(base::NowMs() + 3600000);
  PgServer::Query(uri, kVersion11Sessions);
  PgServer::Query(uri, store::pgsql::kContainerAttributes);
  PgServer::Query(uri, "UPDATE edgealloc_meta SET value = '12' WHERE key = 'schema_version'");
  PgServer::Query(uri,
                  "INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, generation, "
                  "session_id, tenant, lease_expires_at_ms, claimed_at_ms, attributes) "
                  "VALUES ('c-1', 'weur', 'p', 'picked', " + now + ", 7, '" + held + "', 't1', " +
                      lease_end + ", 1000, '{\"gpu\":\"a100\"}'), "
                      "('c-3', 'weur', 'p', 'available', " + now + ", 5, NULL, NULL, NULL, NULL, "
                      "'{\"gpu\":\"a100\"}'), "
                      "('c-4', 'weur', 'p', 'available', " + now + ", 5, NULL, NULL, NULL, NULL, "
                      "'{\"gpu\":\"h100\"}')");
  PgServer::Query(uri, "INSERT INTO container_attributes VALUES ('c-1', 'gpu', 'a100', 'weur', "
                       "'p', 0), ('c-3', 'gpu', 'a100', 'weur', 'p', 0), ('c-4', 'gpu', 'h100', "
                       "'weur', 'p', 0)");

  auto s = testing::OpenPgOrDie(uri, 1, "pg_schema_sessions_test");
  CHECK(PgServer::Query(uri, "SELECT count(*) FROM container_attributes") == "3");
  testing::CheckMigratedAttributesWork(s.get(), held);
}
