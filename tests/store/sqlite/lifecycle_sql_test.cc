#include "store/sqlite/lifecycle_sql.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/store/sqlite/query_plan.h"

namespace {

using testing::PlanOf;
using testing::ScansTheFleet;

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

}  // namespace
