#include "store/sqlite/history_sql.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "store/sqlite/schema.h"
#include "tests/store/history_columns.h"
#include "tests/store/sqlite/query_plan.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using testing::PlanOf;

TEST_CASE("history sql: the prune's window walks a range of the primary key, never the table") {
  const std::string old = PlanOf(store::sql::kPruneHistoryOld);
  INFO(old);
  CHECK(old.find("SEARCH session_history USING INTEGER PRIMARY KEY (rowid<?)") !=
        std::string::npos);
  CHECK(old.find("SCAN session_history") == std::string::npos);
}

// A session column added to the description (store/row_columns.h) and not
// to the history's table or triggers would be lost when its session ends.
TEST_CASE("history sql: the history table and both its triggers carry every session column") {
  testing::TempDir dir;
  auto db = testing::OpenOrDie(dir.File("a.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  const std::string table = testing::QueryText(
      db.get(), "SELECT group_concat(name, ' ') FROM pragma_table_info('session_history')");
  INFO("session_history: " << table);
  CHECK(testing::SessionColumnsNotIn(table) == std::vector<std::string>{});
  for (const char* trigger : {"containers_sessions_ended", "containers_sessions_deleted"}) {
    const std::string sql = testing::QueryText(
        db.get(), std::string("SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = '") +
                      trigger + "'");
    INFO(trigger << ": " << sql);
    CHECK(testing::HistoryInsertProblems(sql) == std::vector<std::string>{});
  }
  CHECK(testing::QueryInt(db.get(),
                          "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' "
                          "AND sql LIKE '%INTO session_history%'") == 2);
}

// A release keeps its session itself (store/sqlite/release.cc): one
// parameter a described column, then the end reason and time.
TEST_CASE("history sql: a released session's insert binds each session column") {
  const std::string sql = store::sql::kKeepEndedSession;
  const std::string last = "?" + std::to_string(store::kSessionColumnCount + 2) + ")";
  CHECK(sql.find(std::string("(") + store::kSessionColumnList.c_str() + ", end_reason") !=
        std::string::npos);
  CHECK(sql.substr(sql.size() - last.size()) == last);
  CHECK(sql.find("VALUES (?1, ?2,") != std::string::npos);
}

}  // namespace
