// Versions 14, 15 and 16 of the SQLite schema: the event log
// (store/sqlite/events_sql.h), webhook delivery cursors
// (store/sqlite/webhook_sql.h), and the event triggers out of the way of a
// cycle's statements.
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "store/sqlite/claim_sql.h"
#include "store/sqlite/db.h"
#include "store/sqlite/events_sql.h"
#include "store/sqlite/history_sql.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/rows.h"
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
                   "died_at_ms = 2000, slots_used = 0, slot_map = '0' WHERE id = 'c-1'")
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

// Whether SQLite gives `sql` a statement journal (a copy of every page it
// touches, each run) inside a transaction: it writes through a trigger (a
// Program opcode in its EXPLAIN) and may abort halfway (a constraint halted
// with ABORT, P2 = 2, or a function call, which may fail).
bool NeedsStatementJournal(store::Db* db, const std::string& sql) {
  store::Statement explain;
  REQUIRE(db->Prepare("EXPLAIN " + sql, &explain).ok());
  bool program = false, may_abort = false;
  for (;;) {
    bool row = false;
    REQUIRE(explain.Step(&row).ok());
    if (!row) break;
    const std::string_view op = explain.ColumnText(1);
    program = program || op == "Program";
    if ((op == "Halt" || op == "HaltIfNull") && explain.ColumnInt64(3) == 2) may_abort = true;
    if (op == "Function" || op == "PureFunc") may_abort = true;
  }
  return program && may_abort;
}

}  // namespace

TEST_CASE("schema: version 16 writes a claim's session, and a release's history and slot, "
          "without a statement journal, where version 15's event triggers needed one") {
  testing::TempDir dir;
  const std::string cycle[] = {store::sql::kInsertSession, store::sql::kKeepEndedSession,
                               store::sql::kFreeSlot, store::sql::kRelease};
  auto old = OpenOrDie(dir.File("v15.db"));
  REQUIRE(store::MigrateTo(old.get(), 15).ok());
  CHECK(NeedsStatementJournal(old.get(), store::sql::kInsertSession));
  CHECK(NeedsStatementJournal(old.get(), store::sql::kFreeSlot));
  auto db = OpenOrDie(dir.File("v16.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  for (const std::string& sql : cycle) {
    INFO(sql);
    CHECK_FALSE(NeedsStatementJournal(db.get(), sql));
  }
  // The last slot of a container that reported itself dead is the one
  // freed slot that fires an event (container.dead), and pays for it.
  CHECK(NeedsStatementJournal(db.get(), store::sql::kFreeLastSlotOfDead));
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

namespace {

void RegisterRow(store::Db* db, const std::string& id) {
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms) "
                   "VALUES ('" + id + "', 'weur', 'chrome', 'available', 1000)")
              .ok());
}

}  // namespace

// Version 17: events.seq a plain rowid (store/sqlite/events_sql.h).
TEST_CASE("schema: version 17 takes AUTOINCREMENT off events: a log a version 16 prune left "
          "empty keeps its high-water mark, so the next event's seq comes after every seq given") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), 16).ok());
  for (const char* id : {"c-1", "c-2", "c-3"}) RegisterRow(db.get(), id);
  // What version 16's prune did to a log older than the retention: every row.
  REQUIRE(db->Exec("DELETE FROM events; UPDATE event_floor SET seq = 3").ok());
  REQUIRE(store::Migrate(db.get()).ok());
  CHECK(QueryInt(db.get(), "SELECT instr(sql, 'AUTOINCREMENT') FROM sqlite_schema "
                           "WHERE name = 'events'") == 0);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM sqlite_sequence") == 0);
  CHECK(QueryText(db.get(), "PRAGMA integrity_check") == "ok");
  // The mark is at the floor, so no reader is served it.
  CHECK(QueryInt(db.get(), "SELECT seq FROM event_floor") == 3);
  CHECK(QueryInt(db.get(), "SELECT max(seq) FROM events") == 3);
  RegisterRow(db.get(), "c-4");
  CHECK(QueryText(db.get(), "SELECT group_concat(seq || ':' || container_id) FROM events "
                            "WHERE seq > 3") == "4:c-4");
}

TEST_CASE("schema: version 17 keeps a version 16 log's rows and seqs, and its inserts no longer "
          "write sqlite_sequence") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), 16).ok());
  for (const char* id : {"c-1", "c-2"}) RegisterRow(db.get(), id);
  REQUIRE(store::Migrate(db.get()).ok());
  CHECK(QueryText(db.get(), "SELECT group_concat(seq || ':' || container_id) FROM "
                            "(SELECT * FROM events ORDER BY seq)") == "1:c-1,2:c-2");
  RegisterRow(db.get(), "c-3");
  CHECK(QueryInt(db.get(), "SELECT max(seq) FROM events") == 3);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM sqlite_sequence") == 0);
}

TEST_CASE("events sql: the prune never takes the newest event, and says so when it is all "
          "that is left") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  for (const char* id : {"c-1", "c-2", "c-3"}) RegisterRow(db.get(), id);
  const int64_t later = int64_t{1} << 60;  // every event is older
  bool any = false;
  REQUIRE(store::AnyRow(db.get(), store::sql::kAnyEventsToPrune, &any, later).ok());
  CHECK(any);
  store::StatementRef prune;
  REQUIRE(db->Cached(store::sql::kPruneEvents, &prune).ok());
  prune->Bind(1, later);
  prune->Bind(2, int64_t{1000});
  int pruned = 0;
  for (bool row = true; row;) {
    REQUIRE(prune->Step(&row).ok());
    pruned += row ? 1 : 0;
  }
  CHECK(pruned == 2);
  CHECK(QueryInt(db.get(), "SELECT seq FROM events") == 3);
  REQUIRE(store::AnyRow(db.get(), store::sql::kAnyEventsToPrune, &any, later).ok());
  CHECK_FALSE(any);  // no write transaction a tick for a row that stays
}
