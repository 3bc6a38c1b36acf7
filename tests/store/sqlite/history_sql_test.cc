#include "store/sqlite/history_sql.h"

#include <sqlite3.h>

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

// The reaper asks this every tick: it must read the ends of the primary key,
// whatever the history holds (a million rows by default). The plan cannot
// tell (a one-row `ORDER BY seq LIMIT 1` reads as SCAN too), so the test
// counts the steps the statement took over 20,000 rows.
TEST_CASE("history sql: asking whether to prune reads the key's ends, not the history") {
  testing::TempDir dir;
  auto db = testing::OpenOrDie(dir.File("a.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  REQUIRE(sqlite3_exec(db->raw(),
                       "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                       "WHERE i < 20000) INSERT INTO session_history (session_id, id, region, "
                       "pool, generation, end_reason, ended_at_ms) SELECT 's' || i, 'c', 'r', "
                       "'p', i, 'released', 1000 + i FROM n",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db->raw(), store::sql::kAnyHistoryToPrune, -1, &st, nullptr) ==
          SQLITE_OK);
  sqlite3_bind_int64(st, 1, 0);  // nothing too old
  sqlite3_bind_int64(st, 2, 1000000);  // nor too many
  CHECK(sqlite3_step(st) == SQLITE_DONE);
  const int steps = sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
  sqlite3_finalize(st);
  INFO("virtual machine steps: " << steps);
  CHECK(steps < 200);
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
