#include "store/sqlite/capacity_reader.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/db.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_map.h"
#include "tests/support/temp_dir.h"

namespace {

// SQLite's plan of `sql` on a new shard file, one line a step.
std::string PlanOf(const char* sql) {
  testing::TempDir dir;
  store::ShardMap map(dir.File("pool.db"), 1);
  std::unique_ptr<store::Db> db;
  REQUIRE(store::OpenShardDb(map, 0, store::DbOptions{}, &db).ok());
  store::Statement plan;
  REQUIRE(db->Prepare(std::string("EXPLAIN QUERY PLAN ") + sql, &plan).ok());
  std::string details;
  bool row = false;
  while (plan.Step(&row).ok() && row) details += plan.ColumnString(3) + "\n";
  return details;
}

TEST_CASE("capacity reader: the count is read from the covering index, not the table") {
  const std::string details = PlanOf(store::sql::kCapacityCounts);
  INFO(details);
  CHECK(details.find("COVERING INDEX containers_counts") != std::string::npos);
}

TEST_CASE("capacity reader: the drained ids are read from their partial index, not the fleet") {
  const std::string details = PlanOf(store::sql::kDrainedIds);
  INFO(details);
  // The walk of the index finds only drained rows (a look at each row's
  // table entry after it costs those rows, never the fleet).
  CHECK(details.find("INDEX containers_drain_requested") != std::string::npos);
}

TEST_CASE("capacity reader: counts by region, pool and status, unchanged until a commit") {
  testing::TempDir dir;
  store::ShardMap map(dir.File("pool.db"), 1);
  std::unique_ptr<store::Db> db;
  REQUIRE(store::OpenShardDb(map, 0, store::DbOptions{}, &db).ok());
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms) VALUES "
                   "('a', 'weur', 'chrome', 'available', 0), "
                   "('b', 'weur', 'chrome', 'available', 0), "
                   "('c', 'weur', 'chrome', 'dead', 0)")
              .ok());
  store::SqliteCapacityReader reader(map.PathOf(0), 250);
  store::CapacityRead read;
  const std::vector<store::CapacityCount>& counts = read.counts;
  bool unchanged = true;
  REQUIRE(reader.Read(&read, &unchanged).ok());
  CHECK_FALSE(unchanged);
  REQUIRE(counts.size() == 2);
  CHECK(counts[0].status == "available");
  CHECK(counts[0].count == 2);
  CHECK(counts[1].status == "dead");
  CHECK(counts[1].count == 1);

  REQUIRE(reader.Read(&read, &unchanged).ok());
  CHECK(unchanged);
  REQUIRE(db->Exec("UPDATE containers SET status = 'available' WHERE id = 'c'").ok());
  REQUIRE(reader.Read(&read, &unchanged).ok());
  CHECK_FALSE(unchanged);
  REQUIRE(counts.size() == 1);
  CHECK(counts[0].count == 3);
  CHECK(reader.name() == map.PathOf(0));
}

TEST_CASE("capacity reader: a missing file is an error, and the next read tries again") {
  testing::TempDir dir;
  store::SqliteCapacityReader reader(dir.File("missing.db"), 250);
  store::CapacityRead read;
  bool unchanged = false;
  CHECK_FALSE(reader.Read(&read, &unchanged).ok());
  CHECK_FALSE(reader.Read(&read, &unchanged).ok());
}

}  // namespace
