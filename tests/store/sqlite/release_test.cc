#include "store/sqlite/release.h"

#include <catch2/catch.hpp>
#include <string>

#include "store/sqlite/db.h"
#include "tests/support/pool_fixture.h"

namespace {

using store::Outcome;
using testing::Pool;

// Makes every insert into session_history fail, as a full disk or an I/O
// error at that statement would, or lets them through again.
void FailHistoryWrites(Pool& pool, bool fail) {
  const char* sql = fail ? "CREATE TRIGGER fail_history BEFORE INSERT ON session_history "
                           "BEGIN SELECT RAISE(ABORT, 'injected: no history row'); END"
                         : "DROP TRIGGER fail_history";
  store::Status s = pool.shard(0)->writer->RunSync([sql](store::Db* db) { return db->Exec(sql); });
  INFO(s.ToString());
  REQUIRE(s.ok());
}

}  // namespace

TEST_CASE("release: the history row is written with the release, by the release, with its reason") {
  Pool pool;
  pool.Add({testing::Spec("c1", "weur")});
  auto s = pool.Claim(testing::Req("weur"));
  REQUIRE(s.outcome == Outcome::kOk);
  const std::string id = s.session.session_id;
  store::Caller admin;
  admin.tenant = "ops";
  admin.admin = true;
  REQUIRE(pool.Release(admin, id, s.session.token).outcome == Outcome::kOk);
  auto ended = pool.storage().GetSession(testing::Tenant(s.session.tenant), id);
  CHECK(ended.outcome == Outcome::kSessionEnded);
  CHECK(ended.end.reason == "released_by_admin");
  CHECK(ended.session.container_id == "c1");
  CHECK(ended.session.token == s.session.token);
}

TEST_CASE("release: a release whose history row cannot be written is not committed either") {
  Pool pool;
  pool.Add({testing::Spec("c1", "weur")});
  auto s = pool.Claim(testing::Req("weur"));
  REQUIRE(s.outcome == Outcome::kOk);
  const store::Caller owner = testing::Tenant(s.session.tenant);
  const std::string id = s.session.session_id;

  FailHistoryWrites(pool, true);
  auto failed = pool.Release(owner, id, s.session.token);
  INFO(failed.message);
  CHECK(failed.outcome != Outcome::kOk);
  // Had the release been committed without its history row, the session
  // would be gone with no trace: it must still be live, and the container
  // still held.
  CHECK(pool.storage().GetSession(owner, id).outcome == Outcome::kOk);
  CHECK(pool.Get("c1").status == "picked");

  FailHistoryWrites(pool, false);
  REQUIRE(pool.Release(owner, id, s.session.token).outcome == Outcome::kOk);
  auto ended = pool.storage().GetSession(owner, id);
  CHECK(ended.outcome == Outcome::kSessionEnded);
  CHECK(ended.end.reason == "released");
  CHECK(pool.Get("c1").status == "available");
}
