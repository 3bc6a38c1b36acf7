#include "store/sqlite/lifecycle_sql.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "store/sqlite/db.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_map.h"
#include "tests/support/temp_dir.h"

namespace {

// The detail lines of EXPLAIN QUERY PLAN for `sql` on a migrated pool file.
std::string PlanOf(const char* sql) {
  testing::TempDir dir;
  store::ShardMap map(dir.File("pool.db"), 1);
  std::unique_ptr<store::Db> db;
  store::Status s = store::OpenShardDb(map, 0, {}, &db);
  INFO(s.ToString());
  REQUIRE(s.ok());
  store::Statement plan;
  s = db->Prepare(std::string("EXPLAIN QUERY PLAN ") + sql, &plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::string details;
  bool row = false;
  while (plan.Step(&row).ok() && row) details += plan.ColumnString(3) + "\n";
  return details;
}

// A line that reads every row of the table, or every entry of an index that
// holds (almost) every row: what must never run each reaper tick or inside
// the writer with a million containers. A scan of containers_dead_reported
// is fine: only rows that reported themselves dead are in it.
bool ScansTheFleet(const std::string& details) {
  size_t start = 0;
  while (start < details.size()) {
    const size_t end = details.find('\n', start);
    const std::string line = details.substr(start, end - start);
    if (line.rfind("SCAN containers", 0) == 0 &&
        line.find("USING INDEX containers_dead_reported") == std::string::npos) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

TEST_CASE("lifecycle sql: the reaper's probes walk their partial indexes, never the fleet") {
  const std::string silent = PlanOf(store::sql::kAnySilent);
  INFO(silent);
  CHECK(silent.find("SEARCH containers USING INDEX containers_heartbeat") != std::string::npos);
  CHECK_FALSE(ScansTheFleet(silent));

  // Without the unary + SQLite chose containers_heartbeat for this one too,
  // and read every row it holds.
  const std::string reported = PlanOf(store::sql::kAnyDeadReported);
  INFO(reported);
  CHECK(reported.find("USING INDEX containers_dead_reported") != std::string::npos);
  CHECK_FALSE(ScansTheFleet(reported));
}

TEST_CASE("lifecycle sql: the reaper's sweeps find their rows through indexes, not a table scan") {
  // Not a walk of containers_session either: every held row, each sweep.
  const std::string picked = PlanOf(store::sql::kReapPicked);
  INFO(picked);
  CHECK(picked.find("SEARCH containers USING INDEX containers_heartbeat") != std::string::npos);
  CHECK(picked.find("USING INDEX containers_dead_reported") != std::string::npos);
  CHECK(picked.find("containers_session") == std::string::npos);
  CHECK_FALSE(ScansTheFleet(picked));

  const std::string unpicked = PlanOf(store::sql::kReapUnpicked);
  INFO(unpicked);
  CHECK(unpicked.find("SEARCH containers USING INDEX containers_heartbeat") != std::string::npos);
  CHECK(unpicked.find("USING INDEX containers_dead_reported") != std::string::npos);
  CHECK_FALSE(ScansTheFleet(unpicked));
}

TEST_CASE("lifecycle sql: a tenant's session list walks that tenant's index in list order, "
          "never another tenant's rows") {
  const std::string tenant = PlanOf(store::sql::kListTenantSessions);
  INFO(tenant);
  // (tenant, session_id): the tenant's sessions only, already in session id
  // order, so stepping it stops after a page (no sort of every row first).
  CHECK(tenant.find("SEARCH containers USING INDEX containers_tenant_session (tenant=? AND "
                    "session_id>?)") != std::string::npos);
  CHECK(tenant.find("TEMP B-TREE") == std::string::npos);
  CHECK_FALSE(ScansTheFleet(tenant));
  CHECK(tenant.find("USING INDEX containers_session ") == std::string::npos);
}

TEST_CASE("lifecycle sql: every tenant's session list and the container list walk an index in "
          "list order, with no sort") {
  const std::string all = PlanOf(store::sql::kListSessions);
  INFO(all);
  CHECK(all.find("SEARCH containers USING INDEX containers_session (session_id>?)") !=
        std::string::npos);
  CHECK(all.find("TEMP B-TREE") == std::string::npos);
  const std::string containers = PlanOf(store::sql::kListContainers);
  INFO(containers);
  CHECK(containers.find("SEARCH containers USING INDEX sqlite_autoindex_containers_1 (id>?)") !=
        std::string::npos);
  CHECK(containers.find("TEMP B-TREE") == std::string::npos);
}

}  // namespace
