#ifndef EDGEALLOC_TESTS_STORE_POSTGRES_PG_QUERY_PLAN_H_
#define EDGEALLOC_TESTS_STORE_POSTGRES_PG_QUERY_PLAN_H_

// What PostgreSQL would do with a statement of store/postgres/*_sql.h, for
// the tests that hold each statement to its index (tests/store/sqlite/
// query_plan.h is SQLite's).

#include <string>
#include <vector>

#include "tests/support/pg_server.h"

namespace testing {

// The plan PostgreSQL makes for `sql` with its $N replaced by `params` (SQL
// literals), one line a node.
inline std::string PgPlanOf(const std::string& uri, std::string sql,
                            const std::vector<std::string>& params) {
  for (size_t i = params.size(); i >= 1; --i) {  // $13 before $1
    const std::string at = "$" + std::to_string(i);
    for (size_t pos = sql.find(at); pos != std::string::npos; pos = sql.find(at, pos)) {
      sql.replace(pos, at.size(), params[i - 1]);
    }
  }
  return PgServer::Query(
      uri, "CREATE OR REPLACE FUNCTION pg_temp.plan_of() RETURNS text AS $f$ DECLARE line text; "
           "out text := ''; BEGIN FOR line IN EXECUTE $q$ EXPLAIN (COSTS OFF) " + sql +
           " $q$ LOOP out := out || line || E'\\n'; END LOOP; RETURN out; END $f$ LANGUAGE plpgsql; "
           "SELECT pg_temp.plan_of()");
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_STORE_POSTGRES_PG_QUERY_PLAN_H_
