// Version 12 of the SQLite schema (store/sqlite/schema.cc): sessions move out
// of the containers row into a table of their own, and containers gain
// slots. A file written by version 10 (the release before) with live
// sessions, idempotency keys and ended sessions is migrated and then used
// through the storage seam: nothing is lost, every session works on.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <utility>

#include "base/clock.h"
#include "store/session_id.h"
#include "store/sqlite/db.h"
#include "store/sqlite/schema.h"
#include "store/storage.h"
#include "tests/store/migrated_sessions.h"
#include "tests/support/await.h"
#include "tests/support/db_queries.h"
#include "tests/support/requests.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Outcome;
using testing::Await;
using testing::QueryInt;
using testing::QueryText;
using testing::Tenant;

std::string NewId() {
  std::string id;
  REQUIRE(store::NewSessionId(0, &id).ok());
  return id;
}

// A held container as version 10 writes it: the session in the row.
void AddHeld(store::Db* db, const std::string& id, int64_t generation, const std::string& session,
             const std::string& tenant, const std::string& key, const std::string& labels,
             int64_t lease_end) {
  REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                   "generation, session_id, tenant, idempotency_key, lease_expires_at_ms, "
                   "claimed_at_ms, labels) VALUES ('" + id + "', 'weur', 'p', 'picked', " +
                   std::to_string(base::NowMs()) + ", " + std::to_string(generation) + ", '" +
                   session + "', '" + tenant + "', " + (key.empty() ? "NULL" : "'" + key + "'") +
                   ", " + std::to_string(lease_end) + ", 1000, " +
                   (labels.empty() ? "NULL" : "'" + labels + "'") + ")")
              .ok());
}

std::unique_ptr<store::Storage> OpenStorage(const std::string& path) {
  store::StorageOptions options;
  options.db = path;
  options.sync = store::Sync::kNormal;
  options.program = "edgealloc test";
  std::unique_ptr<store::Storage> s;
  const store::Status st = store::OpenStorage(options, &s);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return s;
}

}  // namespace

TEST_CASE("schema: version 12 moves a version 10 file's live sessions, keys and history into "
          "sessions, and every one works on") {
  testing::TempDir dir;
  const std::string path = dir.File("pool.db");
  const int64_t lease_end = base::NowMs() + 3600000;
  const std::string keyed = NewId(), plain = NewId(), ended = NewId();
  {
    auto db = testing::OpenOrDie(path);
    REQUIRE(store::MigrateTo(db.get(), 10).ok());
    AddHeld(db.get(), "c-1", 7, keyed, "t1", "k1", R"({"job":"a"})", lease_end);
    AddHeld(db.get(), "c-2", 3, plain, "t2", "", "", lease_end);
    AddHeld(db.get(), "c-5", 9, ended, "t1", "", "", lease_end);
    REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                     "generation) VALUES ('c-3', 'weur', 'p', 'available', " +
                     std::to_string(base::NowMs()) + ", 5)")
                .ok());
    // Ended as version 10 ends a session: end_reason set, the trigger keeps it.
    REQUIRE(db->Exec("UPDATE containers SET end_reason = 'released', status = 'available', "
                     "session_id = NULL, tenant = NULL, lease_expires_at_ms = NULL, "
                     "claimed_at_ms = NULL WHERE id = 'c-5'")
                .ok());
    REQUIRE(QueryInt(db.get(), "SELECT count(*) FROM session_history") == 1);
  }

  auto s = OpenStorage(path);
  {
    auto db = testing::OpenOrDie(path);
    CHECK(QueryInt(db.get(), "PRAGMA user_version") == store::kSchemaVersion);
    CHECK(QueryInt(db.get(), "SELECT count(*) FROM sessions") == 2);
    CHECK(QueryText(db.get(), "SELECT group_concat(id || ':' || status || ':' || slots || ':' || "
                              "slots_used || ':' || slot_map, ',') FROM (SELECT * FROM "
                              "containers ORDER BY id)") ==
          "c-1:picked:1:1:1,c-2:picked:1:1:1,c-3:available:1:0:0,c-5:available:1:0:0");
  }

  testing::CheckMigratedSessionsWork(
      s.get(), {.keyed = keyed, .plain = plain, .ended = ended, .lease_expires_at_ms = lease_end,
                .min_new_token = 4});
}

// A version 11 file (attributes, the step before) keeps its attributes
// through the rebuild of containers: the column, the selector's index rows
// and the trigger that drops them with their container.
TEST_CASE("schema: version 12 keeps a version 11 file's attributes, and selectors match them") {
  testing::TempDir dir;
  const std::string path = dir.File("pool.db");
  const int64_t lease_end = base::NowMs() + 3600000;
  const std::string held = NewId();
  {
    auto db = testing::OpenOrDie(path);
    REQUIRE(store::MigrateTo(db.get(), 11).ok());
    AddHeld(db.get(), "c-1", 7, held, "t1", "", "", lease_end);
    for (const char* id : {"c-3", "c-4"}) {
      REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                       "generation) VALUES ('" + std::string(id) + "', 'weur', 'p', "
                       "'available', " + std::to_string(base::NowMs()) + ", 5)")
                  .ok());
    }
    const std::pair<const char*, const char*> gpus[] = {
        {"c-1", "a100"}, {"c-3", "a100"}, {"c-4", "h100"}};
    for (const auto& gpu : gpus) {
      const std::string id = gpu.first, value = gpu.second;
      REQUIRE(db->Exec("UPDATE containers SET attributes = '{\"gpu\":\"" + value +
                       "\"}' WHERE id = '" + id + "'")
                  .ok());
      REQUIRE(db->Exec("INSERT INTO container_attributes VALUES ('" + id + "', 'gpu', '" + value +
                       "', 'weur', 'p', 0)")
                  .ok());
    }
  }

  auto s = OpenStorage(path);
  testing::CheckMigratedAttributesWork(s.get(), held);

  // The trigger came through the rebuild: a deleted container's rows go.
  auto removed = Await<store::ContainerResult>([&](auto cb) { s->Remove("c-4", cb); });
  REQUIRE(removed.outcome == Outcome::kOk);
  {
    auto db = testing::OpenOrDie(path);
    CHECK(QueryInt(db.get(), "SELECT count(*) FROM container_attributes WHERE container_id = "
                             "'c-4'") == 0);
    CHECK(QueryInt(db.get(), "SELECT count(*) FROM container_attributes") == 2);
  }
}

// Version 18 marks open the attribute rows of available containers, and
// only theirs: a selector then walks them alone. A version 17 file with a
// container of each status and attributes on each is migrated, and claims
// with a selector take the available one, then find nothing.
TEST_CASE("schema: version 18 marks open the attribute rows of the available containers only") {
  testing::TempDir dir;
  const std::string path = dir.File("pool.db");
  {
    auto db = testing::OpenOrDie(path);
    REQUIRE(store::MigrateTo(db.get(), 17).ok());
    for (const char* status : {"available", "picked", "draining", "dead"}) {
      const std::string id = std::string("c-") + status;
      const std::string used = std::string(status) == "picked" ? "1" : "0";
      REQUIRE(db->Exec("INSERT INTO containers (id, region, pool, status, last_heartbeat_ms, "
                       "generation, slots, slots_used, slot_map, attributes) VALUES ('" + id +
                       "', 'weur', 'p', '" + status + "', " + std::to_string(base::NowMs()) +
                       ", 5, 1, " + used + ", '" + used + "', '{\"gpu\":\"a100\"}')")
                  .ok());
      REQUIRE(db->Exec("INSERT INTO container_attributes VALUES ('" + id +
                       "', 'gpu', 'a100', 'weur', 'p', 0)")
                  .ok());
    }
  }
  auto s = OpenStorage(path);
  {
    auto db = testing::OpenOrDie(path);
    CHECK(QueryText(db.get(), "SELECT group_concat(container_id || ':' || open) FROM (SELECT * "
                              "FROM container_attributes ORDER BY container_id)") ==
          "c-available:1,c-dead:0,c-draining:0,c-picked:0");
  }
  store::ClaimRequest req = testing::Req("weur", "t1", "p");
  req.lease_ms = 60000;
  req.selector = {{"gpu", {"a100"}}};
  auto first = Await<store::SessionResult>([&](auto cb) { s->Claim(req, cb); });
  REQUIRE(first.outcome == Outcome::kOk);
  CHECK(first.session.container_id == "c-available");
  CHECK(Await<store::SessionResult>([&](auto cb) { s->Claim(req, cb); }).outcome ==
        Outcome::kNoCapacity);
}
