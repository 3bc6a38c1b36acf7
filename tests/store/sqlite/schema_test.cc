#include "store/sqlite/schema.h"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>

#include "store/sqlite/db.h"
#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::Statement;
using store::Status;

using testing::OpenOrDie;

// a.db in `dir`, as a binary of schema `version` left it.
std::unique_ptr<Db> FileAtVersion(const testing::TempDir& dir, int version) {
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), version).ok());
  return db;
}

// An available container of `generation`, as any version since 2 writes it.
void AddAvailable(Db* db, const std::string& id, int64_t generation) {
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                   "generation) VALUES ('" + id + "', 'weur', 'chrome', 'available', 1000, " +
                   std::to_string(generation) + ")")
              .ok());
}

// Container c-1 held by session s_1 of tenant t1, as version 4 and 5 write it.
constexpr char kHeldContainer[] =
    "INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, generation, "
    "session_id, tenant, lease_expires_at_ms) VALUES ('c-1', 'weur', 'chrome', 'picked', 1000, "
    "7, 's_1', 't1', 99)";

// A file at `version` whose container c-1 is held (kHeldContainer).
std::unique_ptr<Db> HeldAtVersion(const testing::TempDir& dir, int version) {
  auto db = FileAtVersion(dir, version);
  REQUIRE(db->Exec(kHeldContainer).ok());
  return db;
}

// A file at `version` with c-0 available (generation 3) and c-1 held
// (kHeldContainer): the rows the later steps must keep as they are.
std::unique_ptr<Db> AvailableAndHeldAtVersion(const testing::TempDir& dir, int version) {
  auto db = FileAtVersion(dir, version);
  AddAvailable(db.get(), "c-0", 3);
  REQUIRE(db->Exec(kHeldContainer).ok());
  return db;
}

int Version(Db* db) {
  int v = -1;
  REQUIRE(store::SchemaVersion(db, &v).ok());
  return v;
}

using testing::QueryInt;
using testing::QueryText;

// Migrates `db` one step, to `version`, and checks what the file then says
// of itself: its version, and the oldest binary that may open it
// (compatible_version: a step that leaves the file readable to older
// binaries keeps theirs).
void MigrateStep(Db* db, int version, const std::string& compatible) {
  REQUIRE(store::MigrateTo(db, version).ok());
  CHECK(Version(db) == version);
  CHECK(QueryText(db, "SELECT value FROM meta WHERE key = 'compatible_version'") == compatible);
}

std::set<std::string> Columns(Db* db, const std::string& table) {
  Statement q;
  REQUIRE(db->Prepare("SELECT name FROM pragma_table_info('" + table + "')", &q).ok());
  std::set<std::string> out;
  bool row = false;
  while (q.Step(&row).ok() && row) out.insert(q.ColumnString(0));
  return out;
}

}  // namespace

TEST_CASE("schema: an empty file migrates to kSchemaVersion with every table and column") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  CHECK(Version(db.get()) == 0);
  Status s = store::Migrate(db.get());
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Version(db.get()) == store::kSchemaVersion);
  CHECK(QueryText(db.get(), "SELECT value FROM meta WHERE key = 'compatible_version'") ==
        std::to_string(store::kCompatibleVersion));
  const auto cols = Columns(db.get(), "containers");
  for (const char* c : {"id", "region", "pool", "status", "latency_ms", "data",
                        "last_heartbeat_ms", "generation", "drain_requested", "reported_ts_ms",
                        "load", "dead_reported", "died_at_ms", "slots", "slots_used",
                        "slot_map"}) {
    INFO(c);
    CHECK(cols.count(c) == 1);
  }
  const auto session_cols = Columns(db.get(), "sessions");
  for (const char* c : {"session_id", "container_id", "slot", "generation", "tenant",
                        "idempotency_key", "lease_expires_at_ms", "claimed_at_ms", "labels"}) {
    INFO(c);
    CHECK(session_cols.count(c) == 1);
  }
  CHECK_FALSE(db->write_lock()->held());
}

TEST_CASE("schema: a version 1 file keeps its rows and gains the version 2 columns") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), 1).ok());
  CHECK(Version(db.get()) == 1);
  CHECK(Columns(db.get(), "containers").count("dead_reported") == 0);
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, latency_ms, data, "
                   "last_heartbeat_ms, generation) VALUES ('c-1', 'weur', 'chrome', "
                   "'available', 12, '{\"k\":1}', 1000, 7)")
              .ok());

  Status s = store::MigrateTo(db.get(), 2);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Version(db.get()) == 2);
  CHECK(QueryText(db.get(), "SELECT region || '/' || pool || '/' || status || '/' || data "
                            "FROM containers WHERE id = 'c-1'") ==
        "weur/chrome/available/{\"k\":1}");
  CHECK(QueryInt(db.get(), "SELECT generation FROM containers WHERE id = 'c-1'") == 7);
  CHECK(QueryInt(db.get(), "SELECT latency_ms FROM containers WHERE id = 'c-1'") == 12);
  CHECK(QueryInt(db.get(), "SELECT reported_ts_ms + dead_reported FROM containers") == 0);
  CHECK(QueryInt(db.get(), "SELECT load = 0 FROM containers") == 1);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name "
                           "IN ('containers_heartbeat', 'containers_counts')") == 2);
}

TEST_CASE("schema: version 3 writes the status CHECK without IN, allowing the same values") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::MigrateTo(db.get(), 2).ok());
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms) "
                   "VALUES ('c-1', 'weur', 'chrome', 'available', 1000)")
              .ok());
  const std::string update_status =
      "EXPLAIN UPDATE containers SET status = 'draining' WHERE id = 'c-1'";
  auto count_temp_btrees = [&] {
    store::Statement q;
    REQUIRE(db->Prepare(update_status, &q).ok());
    int n = 0;
    bool row = false;
    while (q.Step(&row).ok() && row) n += q.ColumnString(1) == "OpenEphemeral";
    return n;
  };
  CHECK(count_temp_btrees() == 1);  // version 2: the IN list's temporary B-tree

  Status s = store::MigrateTo(db.get(), 3);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Version(db.get()) == 3);
  CHECK(count_temp_btrees() == 0);
  const std::string table_sql =
      QueryText(db.get(), "SELECT sql FROM sqlite_schema WHERE name = 'containers'");
  CHECK_THAT(table_sql, !Catch::Contains("status IN"));
  CHECK_THAT(table_sql, Catch::Contains("status = 'draining'"));
  CHECK(QueryText(db.get(), "PRAGMA integrity_check") == "ok");
  CHECK(QueryText(db.get(), "SELECT status FROM containers WHERE id = 'c-1'") == "available");
  // The same values pass and fail as before.
  CHECK(db->Exec("UPDATE containers SET status = 'dead' WHERE id = 'c-1'").ok());
  CHECK(db->Exec("UPDATE containers SET status = 'bogus' WHERE id = 'c-1'").IsConflict());
  CHECK(db->Exec("UPDATE containers SET status = 'picked' WHERE id = 'c-1'").IsConflict());
  // A fresh connection reads the rewritten schema.
  auto again = OpenOrDie(dir.File("a.db"));
  CHECK(again->Exec("UPDATE containers SET status = 'bogus' WHERE id = 'c-1'").IsConflict());
}

// Version 4: a deleted row's generation raises the
// file's token floor, whoever deletes it.
TEST_CASE("schema: version 4 keeps the highest generation of deleted rows as the token floor") {
  testing::TempDir dir;
  auto db = FileAtVersion(dir, 3);
  AddAvailable(db.get(), "c-1", 7);
  REQUIRE(store::Migrate(db.get()).ok());
  CHECK(QueryInt(db.get(), "SELECT generation FROM token_floor") == 0);
  AddAvailable(db.get(), "c-2", 3);
  REQUIRE(db->Exec("DELETE FROM containers WHERE id = 'c-1'").ok());
  CHECK(QueryInt(db.get(), "SELECT generation FROM token_floor") == 7);
  REQUIRE(db->Exec("DELETE FROM containers WHERE id = 'c-2'").ok());
  CHECK(QueryInt(db.get(), "SELECT generation FROM token_floor") == 7);  // never lowered
  CHECK(db->Exec("INSERT INTO token_floor (only_row, generation) VALUES (2, 0)").IsConflict());
}

TEST_CASE("schema: version 5 adds a session's labels to a version 4 file, rows kept") {
  testing::TempDir dir;
  auto db = HeldAtVersion(dir, 4);
  // A version 4 binary would leave labels behind: it may not open the file.
  MigrateStep(db.get(), 5, "5");
  // The session of the older binary lives on, with no labels.
  CHECK(QueryText(db.get(), "SELECT session_id FROM containers WHERE labels IS NULL") == "s_1");
}

TEST_CASE("schema: version 6 adds the (tenant, session_id) index a tenant's list walks, in place "
          "of (tenant), to a version 5 file, rows kept") {
  testing::TempDir dir;
  auto db = HeldAtVersion(dir, 5);
  const std::string kIndexSql =
      "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = "
      "'containers_tenant_session'";
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = "
                           "'containers_tenant_session'") == 0);
  // Only an index changed: a version 5 binary could still open the file, but
  // a step of a migration to a later version records at most its own
  // version (MigrateTo), and version 7 needs a version 7 binary.
  MigrateStep(db.get(), 6, "6");
  const std::string sql = QueryText(db.get(), kIndexSql);
  CHECK(sql.find("(tenant, session_id)") != std::string::npos);
  CHECK(sql.find("WHERE session_id IS NOT NULL") != std::string::npos);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = "
                           "'containers_tenant'") == 0);
  // The index holds the session of before, and the quota's count uses it.
  CHECK(QueryText(db.get(), "SELECT session_id FROM containers INDEXED BY "
                            "containers_tenant_session WHERE tenant = 't1' AND session_id IS NOT "
                            "NULL") == "s_1");
}

// Version 7: drain_requested is an operator's drain alone, drain_reported
// the container's own. An older binary's drains (an available container
// drained, a picked one asked to drain) cannot be told apart, so they
// become the container's own, which a ready report ends, as before.
TEST_CASE("schema: version 7 adds drain_reported to a version 6 file and makes its drains "
          "the containers' own") {
  testing::TempDir dir;
  auto db = FileAtVersion(dir, 6);
  // c-1 held and asked to drain, c-2 drained, c-3 neither.
  AddAvailable(db.get(), "c-2", 3);
  AddAvailable(db.get(), "c-3", 4);
  REQUIRE(db->Exec(std::string(kHeldContainer) +
                   "; UPDATE containers SET drain_requested = 1 WHERE id = 'c-1'"
                   "; UPDATE containers SET status = 'draining' WHERE id = 'c-2'")
              .ok());
  // An older binary would end an operator's drain: it may not open the file.
  MigrateStep(db.get(), 7, "7");
  CHECK(QueryText(db.get(), "SELECT group_concat(id || ':' || status || ':' || drain_requested "
                            "|| drain_reported, ' ') FROM (SELECT * FROM containers ORDER BY "
                            "id)") == "c-1:picked:01 c-2:draining:01 c-3:available:00");
  CHECK(QueryText(db.get(), "SELECT sql FROM sqlite_schema WHERE name = 'containers_counts'")
            .find("(region, pool, status, drain_requested)") != std::string::npos);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM containers INDEXED BY "
                           "containers_drain_requested WHERE drain_requested = 1") == 0);
}

TEST_CASE("schema: version 8 keeps every session ended from then on, with its reason, in "
          "session_history, a live session of version 7 included") {
  testing::TempDir dir;
  auto db = HeldAtVersion(dir, 7);
  // A binary before version 8 would end sessions without a reason.
  MigrateStep(db.get(), 8, "8");
  CHECK(Columns(db.get(), "containers").count("end_reason") == 1);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM session_history") == 0);
  // A statement that does not set end_reason keeps nothing (a claim, a renew).
  REQUIRE(db->Exec("UPDATE containers SET lease_expires_at_ms = 100 WHERE id = 'c-1'").ok());
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM session_history") == 0);
  // Ending the session of before, as the lease reaper does, keeps it.
  REQUIRE(db->Exec("UPDATE containers SET end_reason = 'expired', status = 'available', "
                   "session_id = NULL, tenant = NULL, lease_expires_at_ms = NULL WHERE id = 'c-1'")
              .ok());
  CHECK(QueryText(db.get(), "SELECT session_id || ' ' || id || ' ' || tenant || ' ' || "
                            "generation || ' ' || end_reason || ' ' || ended_at_ms "
                            "FROM session_history") == "s_1 c-1 t1 7 expired 100");
}

// Version 9: the nodes' published claim counts, in a table of their own;
// nothing else changes, so a version 8 binary may still open the file.
TEST_CASE("schema: version 9 adds node_claim_counts to a version 8 file, rows kept") {
  testing::TempDir dir;
  auto db = FileAtVersion(dir, 8);
  AddAvailable(db.get(), "c-1", 3);
  MigrateStep(db.get(), 9, "8");
  CHECK(Columns(db.get(), "node_claim_counts") ==
        std::set<std::string>{"node_id", "region", "pool", "ok", "no_capacity", "updated_ms"});
  REQUIRE(db->Exec("INSERT INTO node_claim_counts VALUES ('n1', 'weur', 'chrome', 3, 1, 1000)")
              .ok());
  // One row a node and pool: a second publish replaces it.
  CHECK_FALSE(db->Exec("INSERT INTO node_claim_counts VALUES ('n1', 'weur', 'chrome', 4, 1, 2000)")
                  .ok());
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM containers") == 1);
}

// Version 10: when the reaper judged a container dead. Every row is kept as
// it was, its died_at_ms NULL (a dead one comes back with any `ready`, as
// before); a version 8 binary may still open the file.
TEST_CASE("schema: version 10 adds died_at_ms to a version 9 file, every row kept") {
  testing::TempDir dir;
  auto db = AvailableAndHeldAtVersion(dir, 9);
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                   "generation, reported_ts_ms) VALUES ('c-2', 'weur', 'chrome', 'dead', 500, 4, 9)")
              .ok());
  const std::string kRows =
      "SELECT group_concat(id || status || last_heartbeat_ms || generation || reported_ts_ms || "
      "COALESCE(session_id, '-'), ',') FROM (SELECT * FROM containers ORDER BY id)";
  const std::string before = QueryText(db.get(), kRows);
  MigrateStep(db.get(), 10, "8");
  CHECK(Columns(db.get(), "containers").count("died_at_ms") == 1);
  CHECK(QueryText(db.get(), kRows) == before);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM containers WHERE died_at_ms IS NULL") == 3);
}

TEST_CASE("schema: version 11 adds attributes and their table to a version 10 file, every row, "
          "session, history row and idempotency key kept") {
  testing::TempDir dir;
  auto db = AvailableAndHeldAtVersion(dir, 10);
  REQUIRE(db->Exec("UPDATE containers SET idempotency_key = 'k-1', labels = '{\"a\":\"b\"}' "
                   "WHERE id = 'c-1'")
              .ok());
  REQUIRE(db->Exec("INSERT INTO session_history (session_id, id, region, pool, generation, "
                   "tenant, end_reason, ended_at_ms) VALUES ('s_0', 'c-0', 'weur', 'chrome', 2, "
                   "'t1', 'released', 900)")
              .ok());
  const std::string kRows =
      "SELECT group_concat(id || status || generation || COALESCE(session_id, '-') || "
      "COALESCE(idempotency_key, '-') || COALESCE(labels, '-'), ',') "
      "FROM (SELECT * FROM containers ORDER BY id)";
  const std::string before = QueryText(db.get(), kRows);
  MigrateStep(db.get(), 11, "8");
  CHECK(QueryText(db.get(), kRows) == before);
  CHECK(QueryText(db.get(), "SELECT session_id || end_reason FROM session_history") ==
        "s_0released");
  CHECK(Columns(db.get(), "containers").count("attributes") == 1);
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM containers WHERE attributes IS NULL") == 2);
  CHECK(Columns(db.get(), "container_attributes") ==
        std::set<std::string>{"container_id", "key", "value", "region", "pool", "latency_ms"});
  // Its rows go with their container, whoever deletes it.
  REQUIRE(db->Exec("INSERT INTO container_attributes VALUES ('c-0', 'gpu', 't4', 'weur', "
                   "'chrome', 0)")
              .ok());
  REQUIRE(db->Exec("DELETE FROM containers WHERE id = 'c-0'").ok());
  CHECK(QueryInt(db.get(), "SELECT count(*) FROM container_attributes") == 0);
}

TEST_CASE("schema: migrating a current file again changes nothing") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  const int64_t cookie = QueryInt(db.get(), "PRAGMA schema_version");
  const int64_t changes = QueryInt(db.get(), "SELECT total_changes()");
  REQUIRE(store::Migrate(db.get()).ok());
  REQUIRE(store::Migrate(db.get()).ok());
  CHECK(Version(db.get()) == store::kSchemaVersion);
  CHECK(QueryInt(db.get(), "PRAGMA schema_version") == cookie);  // no DDL ran
  CHECK(QueryInt(db.get(), "SELECT total_changes()") == changes);  // no row written
  // MigrateTo an older version on a current file is also a no-op.
  REQUIRE(store::MigrateTo(db.get(), 1).ok());
  CHECK(Version(db.get()) == store::kSchemaVersion);
}

TEST_CASE("schema: a file from a newer binary that declares itself unreadable is refused") {
  testing::TempDir dir;
  const std::string path = dir.File("a.db");
  auto db = OpenOrDie(path);
  REQUIRE(store::Migrate(db.get()).ok());
  const std::string file = std::to_string(store::kSchemaVersion + 2);
  const std::string needs = std::to_string(store::kSchemaVersion + 1);
  REQUIRE(db->Exec("PRAGMA user_version = " + file + "; UPDATE meta SET value = '" + needs +
                   "' WHERE key = 'compatible_version'")
              .ok());
  Status s = store::Migrate(db.get());
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK_THAT(s.message(), Catch::Contains("version " + file));  // the file's
  CHECK_THAT(s.message(), Catch::Contains("version " + needs));  // the binary it needs
  CHECK_THAT(s.message(), Catch::Contains("version " + std::to_string(store::kSchemaVersion)));
  CHECK_THAT(s.message(), Catch::Contains(path));
  CHECK(Version(db.get()) == store::kSchemaVersion + 2);  // untouched
  CHECK_FALSE(db->write_lock()->held());
}

TEST_CASE("schema: a newer file that is declared compatible is used as it is") {
  testing::TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  // A version one ahead whose compatible_version is ours.
  const int newer = store::kSchemaVersion + 1;
  REQUIRE(db->Exec("PRAGMA user_version = " + std::to_string(newer)).ok());
  Status s = store::Migrate(db.get());
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(Version(db.get()) == newer);  // never downgraded
}
