#include "store/sqlite/list_sql.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/store/sqlite/query_plan.h"

namespace {

using testing::PlanOf;
using testing::ScansTheFleet;

TEST_CASE("list sql: a tenant's session list walks that tenant's index in list order, "
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

TEST_CASE("list sql: every tenant's session list and the container list walk an index in "
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

TEST_CASE("list sql: the ended sessions' list walks the history's one index from the newest, "
          "with no sort") {
  const std::string ended = PlanOf(store::sql::kListEndedSessions);
  INFO(ended);
  CHECK(ended.find("SEARCH session_history USING INDEX sqlite_autoindex_session_history_1 "
                   "(session_id<?)") != std::string::npos);
  CHECK(ended.find("TEMP B-TREE") == std::string::npos);
}

}  // namespace
