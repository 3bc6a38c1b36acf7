#include "store/postgres/postgres_storage.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "store/postgres/lane.h"
#include "store/postgres/container_sql.h"
#include "store/postgres/schema_sql.h"
#include "store/postgres/session_sql.h"
#include "tests/support/await.h"
#include "tests/store/postgres/pg_query_plan.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"
#include "tests/support/requests.h"

namespace {

std::unique_ptr<store::PostgresStorage> Open(const std::string& uri, int writers) {
  return testing::OpenPgOrDie(uri, writers, "postgres_storage_test");
}

void Register(store::Storage* storage, const std::vector<std::string>& ids) {
  std::vector<store::ContainerSpec> specs;
  for (const std::string& id : ids) specs.push_back({id, "weur", "chrome", 10, "{}"});
  std::promise<store::ContainerResult> done;
  storage->Register(specs, [&](store::ContainerResult r) { done.set_value(std::move(r)); });
  REQUIRE(done.get_future().get().outcome == store::Outcome::kOk);
}

// A new database of `server` with `ids` registered by the current version,
// and no node on it: the test then takes it back to an older version's shape.
std::string DatabaseWith(testing::PgServer& server, const std::vector<std::string>& ids,
                         int writers) {
  const std::string uri = server.NewDatabaseUri();
  auto storage = Open(uri, writers);
  Register(storage.get(), ids);
  return uri;
}

// The schema version the database says it has, and setting it as an older
// (or newer) node would have left it.
std::string SchemaVersion(const std::string& uri) {
  return testing::PgServer::Query(uri, "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'");
}
void SetSchemaVersion(const std::string& uri, int version) {
  testing::PgServer::Query(uri, "UPDATE edgealloc_meta SET value = '" + std::to_string(version) +
                                    "' WHERE key = 'schema_version'");
}

// Sets `uri`'s schema to version `from`, opens it (with `writers` writers)
// as a node of the current version, and checks that it upgraded it.
std::unique_ptr<store::PostgresStorage> OpenUpgraded(const std::string& uri, int from,
                                                     int writers = 1) {
  SetSchemaVersion(uri, from);
  auto storage = Open(uri, writers);
  CHECK(SchemaVersion(uri) == std::to_string(store::pgsql::kSchemaVersion));
  return storage;
}

}  // namespace

// lane_hash is stored with every row, so LaneHash may never change: these
// are FNV-1a's published values (and the 31 bits kept of them).
TEST_CASE("postgres_storage: LaneHash is FNV-1a of the id, 31 bits") {
  CHECK(store::LaneHash("") == (2166136261u & 0x7fffffff));
  CHECK(store::LaneHash("a") == (0xe40c292cu & 0x7fffffff));
  CHECK(store::LaneHash("foobar") == (0xbf9cf968u & 0x7fffffff));
  CHECK(store::LaneOf("foobar", 1) == 0);
  CHECK(store::LaneOf("foobar", 4) == static_cast<int>((0xbf9cf968u & 0x7fffffff) % 4));
}

TEST_CASE("postgres_storage: each writer is a partition, ids spread over them by LaneOf") {
  testing::PgServer server;
  auto storage = Open(server.NewDatabaseUri(), 4);
  REQUIRE(storage->partitions() == 4);
  std::vector<int> seen(4, 0);
  for (int i = 0; i < 200; ++i) {
    const std::string id = "c" + std::to_string(i);
    int p = -1;
    REQUIRE(storage->PartitionOf(id, &p).ok());
    CHECK(p == store::LaneOf(id, 4));
    ++seen[static_cast<size_t>(p)];
  }
  for (int n : seen) CHECK(n > 20);  // none starved: about 50 each
}

// A database a version 1 node made has lane_hash 0 on every row (the
// column's default): opening it with version 2 sets each row's hash, so the
// partitions' sweeps cover every container again.
TEST_CASE("postgres_storage: migrating from schema version 1 hashes the existing rows, to the current version") {
  testing::PgServer server;
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) ids.push_back("m" + std::to_string(i));
  const std::string uri = DatabaseWith(server, ids, 2);
  testing::PgServer::Query(uri, "UPDATE containers SET lane_hash = 0");
  auto storage = OpenUpgraded(uri, 1, 2);
  for (const std::string& id : ids) {
    CHECK(testing::PgServer::Query(uri, "SELECT lane_hash FROM containers WHERE id = '" + id + "'") ==
          std::to_string(store::LaneHash(id)));
  }
}

TEST_CASE("postgres_storage: version 3 adds labels to a version 2 database, and an older node refuses a newer one") {
  testing::PgServer server;
  const std::string uri = DatabaseWith(server, {"v2-1"}, 1);
  // As a version 2 node left it: no labels column (a session's, since
  // version 13 in the sessions table).
  testing::PgServer::Query(uri, "DROP VIEW session_rows");
  testing::PgServer::Query(uri, "ALTER TABLE sessions DROP COLUMN labels");
  testing::PgServer::Query(uri, "DROP TABLE sessions CASCADE");
  {
    auto storage = OpenUpgraded(uri, 2);
    CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM information_schema.columns WHERE "
                                        "table_name = 'sessions' AND column_name = 'labels'") ==
          "1");
  }
  SetSchemaVersion(uri, store::pgsql::kSchemaVersion + 1);
  store::StorageOptions options;
  options.db = uri;
  std::unique_ptr<store::PostgresStorage> refused;
  const store::Status s = store::PostgresStorage::Open(options, &refused);
  CHECK_FALSE(s.ok());
  CHECK(s.ToString().find("upgrade edgealloc") != std::string::npos);
}

// Version 4: a tenant's list walks (tenant, session_id COLLATE "C"), which
// replaces (tenant); the lists' byte order has indexes of its own. (Since
// version 13 the sessions' are on the sessions table: its primary key is
// in that order.)
TEST_CASE("postgres_storage: version 4 adds the lists' indexes to a version 3 database, rows kept") {
  testing::PgServer server;
  const std::string uri = DatabaseWith(server, {"v3-1"}, 1);
  // As a version 3 node left it.
  testing::PgServer::Query(uri, "DROP INDEX IF EXISTS sessions_tenant_session");
  testing::PgServer::Query(uri, "DROP INDEX IF EXISTS containers_id_c");
  auto storage = OpenUpgraded(uri, 3);
  const std::string tenant_index = testing::PgServer::Query(
      uri, "SELECT indexdef FROM pg_indexes WHERE indexname = 'sessions_tenant_session'");
  INFO(tenant_index);
  CHECK(tenant_index.find("(tenant, session_id)") != std::string::npos);
  CHECK(testing::PgServer::Query(
            uri, "SELECT count(*) FROM pg_indexes WHERE indexname = 'containers_id_c'") == "1");
  CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM containers") == "1");
}

// Version 5: an operator's drain holds. A version 4 node's drains (an
// available container drained, a picked one asked to drain) cannot be told
// operator from self, so they become the container's own: a ready ends them.
TEST_CASE("postgres_storage: version 5 makes a version 4 database's drains the containers' own") {
  testing::PgServer server;
  const std::string uri = DatabaseWith(server, {"v4-1", "v4-2", "v4-3"}, 1);
  // As a version 4 node left it: no drain_reported, v4-1 draining, v4-2
  // picked and asked to drain.
  testing::PgServer::Query(uri, "DROP INDEX containers_drain_requested");
  testing::PgServer::Query(uri, "DROP VIEW container_rows");
  testing::PgServer::Query(uri, "DROP TRIGGER events_container_draining ON containers");
  testing::PgServer::Query(uri, "ALTER TABLE containers DROP COLUMN drain_reported");
  testing::PgServer::Query(uri, "UPDATE containers SET status = 'draining' WHERE id = 'v4-1'");
  testing::PgServer::Query(uri, "INSERT INTO sessions (session_id, container_id, slot, generation, "
                                "tenant, lease_expires_at_ms) VALUES ('s_1', 'v4-2', 0, 1, 't1', 1)");
  testing::PgServer::Query(uri, "UPDATE containers SET status = 'picked', slots_used = 1, "
                                "slot_map = '1', drain_requested = true WHERE id = 'v4-2'");
  auto storage = OpenUpgraded(uri, 4);
  CHECK(testing::PgServer::Query(
            uri, "SELECT string_agg(id || ':' || status || ':' || drain_requested || ':' || "
                 "drain_reported, ' ' ORDER BY id) FROM containers") ==
        "v4-1:draining:false:true v4-2:picked:false:true v4-3:available:false:false");
  CHECK(testing::PgServer::Query(
            uri, "SELECT count(*) FROM pg_indexes WHERE indexname = "
                 "'containers_drain_requested'") == "1");
  // As before: its ready ends v4-1's drain.
  int partition = -1;
  REQUIRE(storage->PartitionOf("v4-1", &partition).ok());
  store::HeartbeatWriteResult result;
  REQUIRE(storage->WriteHeartbeats(partition,
                                   {{"v4-1", 0, std::nullopt, std::nullopt,
                                     store::ReportedState::kReady}},
                                   &result).ok());
  CHECK(storage->GetContainer("v4-1").container.status == "available");
}

// Version 6: the session history, filled by a trigger on end_reason.
TEST_CASE("postgres_storage: version 6 adds the session history to a version 5 database, and a "
          "session ended from then on is kept with its reason") {
  testing::PgServer server;
  const std::string uri = DatabaseWith(server, {"v5-1"}, 1);
  // As a version 5 node left it.
  testing::PgServer::Query(uri, "DROP TABLE session_history");
  testing::PgServer::Query(uri, "DROP FUNCTION edgealloc_keep_ended_sessions CASCADE");
  testing::PgServer::Query(uri, "DROP VIEW container_rows");
  testing::PgServer::Query(uri, "ALTER TABLE containers DROP COLUMN end_reason");
  auto storage = OpenUpgraded(uri, 5);
  CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM containers") == "1");
  store::ClaimRequest req = testing::Req("weur", "t1", "chrome");
  req.lease_ms = 60000;
  auto c = testing::Await<store::SessionResult>([&](auto cb) { storage->Claim(req, cb); });
  REQUIRE(c.outcome == store::Outcome::kOk);
  CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM session_history") == "0");
  auto r = testing::Await<store::SessionResult>([&](auto cb) {
    storage->Release(testing::Tenant("t1"), c.session.session_id, c.session.token, cb);
  });
  REQUIRE(r.outcome == store::Outcome::kOk);
  CHECK(testing::PgServer::Query(uri, "SELECT id || ' ' || end_reason FROM session_history") ==
        "v5-1 released");
}

// Version 7: the nodes' published claim counts, in a table of their own.
TEST_CASE("postgres_storage: version 7 adds node_claim_counts to a version 6 database, rows kept") {
  testing::PgServer server;
  const std::string uri = DatabaseWith(server, {"v6-1"}, 1);
  testing::PgServer::Query(uri, "DROP TABLE node_claim_counts");
  auto storage = OpenUpgraded(uri, 6);
  REQUIRE(storage->PublishClaimCounts("n1", {{"weur", "chrome", 3, 1}}, 60000, 100).ok());
  CHECK(testing::PgServer::Query(uri, "SELECT node_id || ':' || ok || ':' || no_capacity FROM "
                                      "node_claim_counts") == "n1:3:1");
  CHECK(storage->GetContainer("v6-1").outcome == store::Outcome::kOk);
}

// A tenant's page must not read other tenants' sessions, nor sort them all:
// the statement walks containers_tenant_session in the list's order.
TEST_CASE("postgres_storage: a tenant's session list walks its tenant's index in list order, "
          "every tenant's list an index of session ids") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto storage = Open(uri, 1);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 2000; ++i) {
    specs.push_back({"c" + std::to_string(i), "weur", "p" + std::to_string(i % 40), 0, "{}"});
  }
  std::promise<store::ContainerResult> registered;
  storage->Register(specs, [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);
  std::vector<std::promise<store::SessionResult>> claims(1000);
  for (size_t i = 0; i < claims.size(); ++i) {
    store::ClaimRequest req;
    req.region = "weur";
    req.pool = "p" + std::to_string(i % 40);
    req.lease_ms = 600000;
    req.caller.tenant = i < 997 ? "a" : "b";
    storage->Claim(req, [&claims, i](store::SessionResult r) { claims[i].set_value(std::move(r)); });
  }
  for (auto& c : claims) REQUIRE(c.get_future().get().outcome == store::Outcome::kOk);
  testing::PgServer::Query(uri, "ANALYZE containers; ANALYZE sessions");

  // At most 100 examined (a bound well below the rows, as in a fleet). What
  // the page examines (CTE examined) is an index's walk, in order; the walk
  // over those few (CTE walked) sorts them again, which costs a page.
  auto examined = [](const std::string& plan) {
    const size_t from = plan.find("CTE examined");
    return plan.substr(from, plan.find("CTE walked", from) - from);
  };
  const std::vector<std::string> params = {"''",  "NULL", "NULL",    "'k'", "'v'",
                                           "11",  "100",  "1048576", "'b'"};
  const std::string tenant = testing::PgPlanOf(uri, store::pgsql::kListTenantSessions, params);
  INFO(tenant);
  CHECK(examined(tenant).find("Index Scan using sessions_tenant_session on sessions") !=
        std::string::npos);
  CHECK(examined(tenant).find("Sort") == std::string::npos);
  CHECK(tenant.find("Seq Scan") == std::string::npos);
  const std::string all = testing::PgPlanOf(uri, store::pgsql::kListSessions, params);
  INFO(all);
  CHECK(examined(all).find("Index Scan using sessions_pkey") != std::string::npos);
  CHECK(examined(all).find("Sort") == std::string::npos);
  CHECK(all.find("Seq Scan") == std::string::npos);
  const std::string containers =
      testing::PgPlanOf(uri, store::pgsql::kListContainers,
             {"''", "NULL", "NULL", "'dead'", "11", "100", "1048576", "NULL", "NULL"});
  INFO(containers);
  CHECK(examined(containers).find("Index Scan using containers_id_c") != std::string::npos);
  CHECK(examined(containers).find("Sort") == std::string::npos);
  CHECK(containers.find("Seq Scan") == std::string::npos);
}

namespace {

store::SessionResult ClaimOne(store::Storage* storage) {
  store::ClaimRequest req;
  req.region = "weur";
  req.pool = "chrome";
  req.lease_ms = 60000;
  req.caller.tenant = "t";
  std::promise<store::SessionResult> done;
  storage->Claim(req, [&](store::SessionResult r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

}  // namespace

// A node starting while a long transaction reads `containers` (a pg_dump,
// an operator's open psql) neither waits for it nor makes the other nodes
// wait: the schema is current, so no DDL runs (an ALTER TABLE ... IF NOT
// EXISTS would queue for ACCESS EXCLUSIVE behind the reader, and every
// statement of every node behind it).
TEST_CASE("postgres_storage: a role that may not make the schema is told in one line what to run") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();  // owned by the superuser
  const std::string db = uri.substr(uri.rfind('/') + 1);
  testing::PgServer::Query(uri, "CREATE ROLE lowly LOGIN");
  std::string lowly = uri;
  lowly.replace(lowly.find("://") + 3, lowly.find('@') - lowly.find("://") - 3, "lowly");
  const store::StorageOptions options = testing::PgOptions(lowly, 1, "postgres_storage_test");
  std::unique_ptr<store::PostgresStorage> storage;
  store::Status s = store::PostgresStorage::Open(options, &storage);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK_THAT(s.message(), Catch::Contains("lowly may not create tables in schema public") &&
                              Catch::Contains("ALTER DATABASE " + db + " OWNER TO lowly") &&
                              !Catch::Contains("\n") && !Catch::Contains("CREATE TABLE"));
  // Given the privilege, it makes the schema.
  testing::PgServer::Query(uri, "GRANT CREATE ON SCHEMA public TO lowly");
  s = store::PostgresStorage::Open(options, &storage);
  INFO(s.ToString());
  REQUIRE(s.ok());
  storage.reset();
  // Tables another role owns cannot be migrated by this one: it is told whose they are.
  testing::PgServer::Query(uri, "CREATE ROLE other LOGIN");
  testing::PgServer::Query(uri, "REASSIGN OWNED BY lowly TO other");
  SetSchemaVersion(uri, 3);
  s = store::PostgresStorage::Open(options, &storage);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK_THAT(s.message(), Catch::Contains("does not own edgealloc's tables") &&
                              Catch::Contains("REASSIGN OWNED BY other TO lowly"));
}

TEST_CASE("postgres_storage: a node starts behind a long transaction and holds up nobody") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto first = Open(uri, 1);
  Register(first.get(), {"c1", "c2"});
  std::unique_ptr<store::PgConn> backup;
  REQUIRE(store::PgConn::Connect(uri, "a backup", &backup).ok());
  REQUIRE(backup->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM containers")
              .ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto opened = std::async(std::launch::async, [&] { return Open(uri, 1); });
  REQUIRE(opened.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto second = opened.get();
  // Meanwhile and after, the first node's claims go through at once.
  CHECK(ClaimOne(first.get()).outcome == store::Outcome::kOk);
  CHECK(ClaimOne(second.get()).outcome == store::Outcome::kOk);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  REQUIRE(backup->Exec("COMMIT").ok());
}

// A migration that cannot have its lock (a transaction holds `containers`
// past the migration's lock timeout, attempt after attempt) gives up and
// says why, rather than holding every node's statements behind it.
TEST_CASE("postgres_storage: a migration behind a lock gives up in bounded time, naming why") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  { auto storage = Open(uri, 1); }
  SetSchemaVersion(uri, 2);
  std::unique_ptr<store::PgConn> holder;
  REQUIRE(store::PgConn::Connect(uri, "holder", &holder).ok());
  REQUIRE(holder->Exec("BEGIN; SELECT count(*) FROM containers").ok());
  // Another session's read is never blocked behind the waiting migration
  // for longer than one attempt's lock timeout.
  auto migrating = std::async(std::launch::async, [&] {
    store::StorageOptions options;
    options.db = uri;
    std::unique_ptr<store::PostgresStorage> storage;
    return store::PostgresStorage::Open(options, &storage);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM containers") == "0");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(2500));
  REQUIRE(migrating.wait_for(std::chrono::seconds(90)) == std::future_status::ready);
  const store::Status s = migrating.get();
  CHECK(s.IsBusy());
  CHECK_THAT(s.ToString(), Catch::Contains("long transaction"));
  REQUIRE(holder->Exec("COMMIT").ok());
  // Once it is gone, the migration goes through.
  { auto storage = Open(uri, 1); }
  CHECK(SchemaVersion(uri) == std::to_string(store::pgsql::kSchemaVersion));
}

// A claim locks only the container it takes: while its transaction is open,
// the other candidates are free to every other node's claims.
TEST_CASE("postgres_storage: a claim in flight locks the one container it picks, no other") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto storage = Open(uri, 1);
  Register(storage.get(), {"c1", "c2", "c3"});
  std::unique_ptr<store::PgConn> node;
  REQUIRE(store::PgConn::Connect(uri, "a node's writer", &node).ok());
  REQUIRE(node->Exec("BEGIN").ok());
  store::PgResult claimed;
  // The product's claim statement, as the writer sends it (K = 5).
  REQUIRE(node->Run(store::pgsql::kClaimFittest.c_str(),
                    {store::P("weur"), store::P("chrome"), store::P(int64_t{30000}),
                     store::P(int64_t{5}), store::P("s-1"), store::P("t"), store::Null(),
                     store::P(int64_t{60000}), store::P(int64_t{-1}), store::Null()},
                    &claimed)
              .ok());
  REQUIRE(claimed.rows() == 1);
  // Another transaction finds the two others unlocked.
  std::unique_ptr<store::PgConn> other;
  REQUIRE(store::PgConn::Connect(uri, "another node", &other).ok());
  REQUIRE(other->Exec("BEGIN").ok());
  store::PgResult free;
  REQUIRE(other->Run("SELECT id FROM containers FOR UPDATE SKIP LOCKED", {}, &free).ok());
  CHECK(free.rows() == 2);
  REQUIRE(other->Exec("ROLLBACK").ok());
  // And a claim through the storage, on another connection, gets one.
  CHECK(ClaimOne(storage.get()).outcome == store::Outcome::kOk);
  REQUIRE(node->Exec("COMMIT").ok());
}

// Reads wait for a lock (a migration, an operator's LOCK TABLE) at most the
// reader's lock timeout, and then answer an error: never an unbounded wait.
TEST_CASE("postgres_storage: a read behind a table lock fails in bounded time") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto storage = Open(uri, 1);
  Register(storage.get(), {"c1"});
  std::unique_ptr<store::PgConn> locker;
  REQUIRE(store::PgConn::Connect(uri, "an operator", &locker).ok());
  REQUIRE(locker->Exec("BEGIN; LOCK TABLE containers IN ACCESS EXCLUSIVE MODE").ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto read = std::async(std::launch::async, [&] { return storage->GetContainer("c1"); });
  REQUIRE(read.wait_for(std::chrono::seconds(15)) == std::future_status::ready);
  CHECK(read.get().outcome != store::Outcome::kOk);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(6));
  REQUIRE(locker->Exec("ROLLBACK").ok());
  CHECK(storage->GetContainer("c1").outcome == store::Outcome::kOk);
}
