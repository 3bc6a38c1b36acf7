#include "store/sqlite/list_sql.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/store/sqlite/query_plan.h"

namespace {

using testing::PlanOf;
using testing::ScansTheFleet;

// Checks that `plan` has the index search `search` and sorts nothing (no
// temporary B-tree): a page of the list stops after its rows.
void CheckSearchesUnsorted(const std::string& plan, const std::string& search) {
  INFO(plan);
  CHECK(plan.find(search) != std::string::npos);
  CHECK(plan.find("TEMP B-TREE") == std::string::npos);
}

TEST_CASE("list sql: a tenant's session list walks that tenant's index in list order, "
          "never another tenant's rows") {
  const std::string tenant = PlanOf(store::sql::kListTenantSessions);
  INFO(tenant);
  // (tenant, session_id): the tenant's sessions only, already in session id
  // order, so stepping it stops after a page (no sort of every row first).
  CheckSearchesUnsorted(tenant, "SEARCH s USING INDEX sessions_tenant_session "
                                "(tenant=? AND session_id>?)");
  CHECK_FALSE(ScansTheFleet(tenant));
  CHECK(tenant.find("USING INDEX sqlite_autoindex_sessions_1 ") == std::string::npos);
}

TEST_CASE("list sql: every tenant's session list and the container list walk an index in "
          "list order, with no sort") {
  CheckSearchesUnsorted(PlanOf(store::sql::kListSessions),
                        "SEARCH s USING INDEX sqlite_autoindex_sessions_1 (session_id>?)");
  CheckSearchesUnsorted(PlanOf(store::sql::kListContainers),
                        "SEARCH c USING INDEX sqlite_autoindex_containers_1 (id>?)");
}

TEST_CASE("list sql: the ended sessions' list walks the history's one index from the newest, "
          "with no sort") {
  CheckSearchesUnsorted(PlanOf(store::sql::kListEndedSessions),
                        "SEARCH session_history USING INDEX sqlite_autoindex_session_history_1 "
                        "(session_id<?)");
}

}  // namespace
