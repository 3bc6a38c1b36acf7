#ifndef EDGEALLOC_TESTS_STORE_SQLITE_QUERY_PLAN_H_
#define EDGEALLOC_TESTS_STORE_SQLITE_QUERY_PLAN_H_

// What SQLite would do with a statement of store/sqlite/*_sql.h on a
// migrated pool file, for the tests that hold each statement to its index.

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "store/sqlite/db.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_map.h"
#include "tests/support/temp_dir.h"

namespace testing {

// The detail lines of EXPLAIN QUERY PLAN for `sql` on a migrated pool file.
inline std::string PlanOf(const char* sql) {
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
inline bool ScansTheFleet(const std::string& details) {
  size_t start = 0;
  while (start < details.size()) {
    const size_t end = details.find('\n', start);
    const std::string line = details.substr(start, end - start);
    // The views' statements (container_rows, session_rows) name their
    // tables c and s.
    const bool scan = line.rfind("SCAN containers", 0) == 0 || line.rfind("SCAN c", 0) == 0 ||
                      line.rfind("SCAN s", 0) == 0;
    if (scan && line.rfind("SCAN session_history", 0) != 0 &&
        line.find("USING INDEX containers_dead_reported") == std::string::npos) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_STORE_SQLITE_QUERY_PLAN_H_
