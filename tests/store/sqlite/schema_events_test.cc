// Versions 14 and 15 of the SQLite schema: the event log (store/sqlite/events_sql.h)
// and webhook delivery cursors (store/sqlite/webhook_sql.h).
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "store/sqlite/db.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/webhook_sql.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

using testing::OpenOrDie;
using testing::QueryInt;
using testing::QueryText;

TEST_CASE("schema: version 14 adds the event log to a version 13 file, whose changes then "
          "write events, the ended sessions before the death") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), 13).ok());
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                   "generation, slots_used, slot_map) VALUES ('c-1', 'weur', 'chrome', "
                   "'picked', 1000, 7, 1, '1')")
              .ok());
  REQUIRE(db->Exec("INSERT INTO sessions (session_id, container_id, slot, generation, tenant, "
                   "lease_expires_at_ms) VALUES ('s_1', 'c-1', 0, 7, 't1', 99)")
              .ok());
  REQUIRE(store::Migrate(db.get()).ok());
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM events") == 0);
  // The reaper's statement: every session of the container ends, it dies.
  REQUIRE(db->Exec("UPDATE containers SET status = 'dead', end_reason = 'container_dead', "
                   "slots_used = 0, slot_map = '0' WHERE id = 'c-1'")
              .ok());
  CHECK(QueryText(db.get(), "SELECT group_concat(type || ':' || coalesce(session_id, '') || ':' "
                            "|| coalesce(end_reason, ''), ',') FROM (SELECT * FROM events "
                            "ORDER BY seq)") ==
        "session.ended:s_1:container_dead,container.dead::");
  // A change rolled back takes its event with it.
  REQUIRE(db->Exec("BEGIN; DELETE FROM containers WHERE id = 'c-1'; ROLLBACK").ok());
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM events") == 2);
}

namespace {

// Runs kLeaseWebhook for `owner` at now_ms; true if owner then holds it.
bool LeaseAt(store::Db* db, const char* owner, int64_t now_ms, std::string* cursor) {
  store::StatementRef q;
  REQUIRE(db->Cached(store::sql::kLeaseWebhook, &q).ok());
  q->Bind(1, "acme");
  q->Bind(2, owner);
  q->Bind(3, now_ms);
  q->Bind(4, int64_t{1000});
  bool row = false;
  REQUIRE(q->Step(&row).ok());
  if (row) *cursor = q->ColumnString(0);
  return row;
}

}  // namespace

// Version 15: webhook delivery cursors (store/sqlite/webhook_sql.h).
TEST_CASE("schema: version 15 adds webhook cursors to a version 14 file, one owner a lease") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), 14).ok());
  REQUIRE(store::Migrate(db.get()).ok());
  std::string cursor = "unset";
  CHECK(LeaseAt(db.get(), "node-a", 5000, &cursor));
  CHECK(cursor.empty());
  store::StatementRef ack;
  REQUIRE(db->Cached(store::sql::kAckWebhook, &ack).ok());
  ack->Bind(1, "acme");
  ack->Bind(2, "node-a");
  ack->Bind(3, "41");
  ack->Bind(4, int64_t{5000});
  ack->Bind(5, int64_t{1000});
  bool row = false;
  REQUIRE(ack->Step(&row).ok());
  CHECK(row);
  CHECK_FALSE(LeaseAt(db.get(), "node-b", 5500, &cursor));  // node-a's till 6000
  CHECK(LeaseAt(db.get(), "node-b", 6001, &cursor));        // lapsed
  CHECK(cursor == "41");
  CHECK_FALSE(LeaseAt(db.get(), "node-a", 6500, &cursor));
}
