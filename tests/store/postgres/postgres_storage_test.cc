#include "store/postgres/postgres_storage.h"

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "store/postgres/lane.h"
#include "store/postgres/lifecycle_sql.h"
#include "tests/support/pg_server.h"

namespace {

std::unique_ptr<store::PostgresStorage> Open(const std::string& uri, int writers) {
  store::StorageOptions options;
  options.db = uri;
  options.pg_writers = writers;
  options.program = "postgres_storage_test";
  std::unique_ptr<store::PostgresStorage> storage;
  store::Status s = store::PostgresStorage::Open(options, &storage);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return storage;
}

void Register(store::Storage* storage, const std::vector<std::string>& ids) {
  std::vector<store::ContainerSpec> specs;
  for (const std::string& id : ids) specs.push_back({id, "weur", "chrome", 10, "{}"});
  std::promise<store::ContainerResult> done;
  storage->Register(specs, [&](store::ContainerResult r) { done.set_value(std::move(r)); });
  REQUIRE(done.get_future().get().outcome == store::Outcome::kOk);
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
  const std::string uri = server.NewDatabaseUri();
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) ids.push_back("m" + std::to_string(i));
  {
    auto storage = Open(uri, 2);
    Register(storage.get(), ids);
  }
  testing::PgServer::Query(uri, "UPDATE containers SET lane_hash = 0");
  testing::PgServer::Query(uri, "UPDATE edgealloc_meta SET value = '1' WHERE key = 'schema_version'");
  auto storage = Open(uri, 2);
  CHECK(testing::PgServer::Query(uri, "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'") ==
        std::to_string(store::pgsql::kSchemaVersion));
  for (const std::string& id : ids) {
    CHECK(testing::PgServer::Query(uri, "SELECT lane_hash FROM containers WHERE id = '" + id + "'") ==
          std::to_string(store::LaneHash(id)));
  }
}

TEST_CASE("postgres_storage: version 3 adds labels to a version 2 database, and an older node refuses a newer one") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  {
    auto storage = Open(uri, 1);
    Register(storage.get(), {"v2-1"});
  }
  // As a version 2 node left it: no labels column.
  testing::PgServer::Query(uri, "ALTER TABLE containers DROP COLUMN labels");
  testing::PgServer::Query(uri, "UPDATE edgealloc_meta SET value = '2' WHERE key = 'schema_version'");
  {
    auto storage = Open(uri, 1);
    CHECK(testing::PgServer::Query(uri, "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'") == "3");
    CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM containers WHERE labels IS NULL") == "1");
  }
  testing::PgServer::Query(uri, "UPDATE edgealloc_meta SET value = '4' WHERE key = 'schema_version'");
  store::StorageOptions options;
  options.db = uri;
  std::unique_ptr<store::PostgresStorage> refused;
  const store::Status s = store::PostgresStorage::Open(options, &refused);
  CHECK_FALSE(s.ok());
  CHECK(s.ToString().find("upgrade edgealloc") != std::string::npos);
}
