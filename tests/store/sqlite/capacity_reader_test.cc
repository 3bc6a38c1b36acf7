#include "store/sqlite/capacity_reader.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/db.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_map.h"
#include "tests/store/sqlite/query_plan.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using testing::PlanOf;

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

TEST_CASE("capacity reader: version 13 widens the counts' index of a version 12 file, rows kept") {
  testing::TempDir dir;
  store::ShardMap map(dir.File("pool.db"), 1);
  {
    std::unique_ptr<store::Db> db = testing::OpenOrDie(map.PathOf(0));
    REQUIRE(store::MigrateTo(db.get(), 12).ok());
    REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, slots, "
                     "slots_used, slot_map) VALUES ('a', 'weur', 'chrome', 'available', 0, 4, 1, "
                     "'1000'), ('b', 'weur', 'chrome', 'picked', 0, 2, 2, '11'), "
                     "('c', 'weur', 'chrome', 'draining', 0, 3, 0, '000')")
                .ok());
    REQUIRE(store::MigrateTo(db.get(), 13).ok());
    int version = 0;
    REQUIRE(store::SchemaVersion(db.get(), &version).ok());
    CHECK(version == 13);
  }
  store::SqliteCapacityReader reader(map.PathOf(0), 250);
  store::CapacityRead read;
  bool unchanged = true;
  REQUIRE(reader.Read(&read, &unchanged).ok());
  REQUIRE(read.counts.size() == 3);
  // available, draining, picked: by status name.
  CHECK((read.counts[0].slots == 4 && read.counts[0].slots_used == 1));
  CHECK((read.counts[1].slots == 3 && read.counts[1].slots_used == 0));
  CHECK((read.counts[2].slots == 2 && read.counts[2].slots_used == 2));
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
