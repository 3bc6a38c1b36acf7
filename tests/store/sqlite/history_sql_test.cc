#include "store/sqlite/history_sql.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/store/sqlite/query_plan.h"

namespace {

using testing::PlanOf;

TEST_CASE("history sql: the prune's window walks a range of the primary key, never the table") {
  const std::string old = PlanOf(store::sql::kPruneHistoryOld);
  INFO(old);
  CHECK(old.find("SEARCH session_history USING INTEGER PRIMARY KEY (rowid<?)") !=
        std::string::npos);
  CHECK(old.find("SCAN session_history") == std::string::npos);
}

}  // namespace
