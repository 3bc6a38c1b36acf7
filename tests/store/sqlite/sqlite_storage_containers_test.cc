#include "store/sqlite/sqlite_storage.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/sqlite/db.h"
#include "store/sqlite/write_lock.h"
#include "tests/support/pool_fixture.h"
#include "tests/support/broken_reads.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Outcome;
using testing::Pool;
using testing::Req;
using testing::Spec;
using testing::Tenant;

std::string Name(Outcome o) { return store::OutcomeName(o); }

}  // namespace

TEST_CASE("registry: new containers are available, with what was registered") {
  Pool pool;
  const int64_t before = base::NowMs();
  auto r = pool.Register({Spec("c1", "weur", "chrome", 12, R"({"endpoint":"ws://a"})"),
                          Spec("c2", "weur")});
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.count == 2);
  auto c1 = pool.Get("c1");
  CHECK(c1.id == "c1");
  CHECK(c1.region == "weur");
  CHECK(c1.pool == "chrome");
  CHECK(c1.status == "available");
  CHECK(c1.latency_ms == 12);
  CHECK(c1.data == R"({"endpoint":"ws://a"})");
  CHECK(c1.last_heartbeat_ms >= before);
  CHECK_FALSE(c1.session_id.has_value());
  CHECK_FALSE(c1.drain_requested);
  CHECK(pool.Get("c2").pool == "default");
  CHECK(Name(pool.storage().GetContainer("nope").outcome) == "not_found");
  CHECK(Name(pool.Register({}).outcome) == "ok");
}

TEST_CASE("registry: updating a picked container changes its data and latency, never its holder") {
  Pool pool;
  pool.Add({Spec("c1", "weur", "default", 10, R"({"v":1})")});
  auto s = pool.Claim(Req("weur"));
  REQUIRE(s.outcome == Outcome::kOk);
  pool.Add({Spec("c1", "eeur", "other", 99, R"({"v":2})")});
  auto c = pool.Get("c1");
  CHECK(c.status == "picked");
  REQUIRE(c.session_id.has_value());
  CHECK(*c.session_id == s.session.session_id);
  CHECK(c.generation == s.session.token);
  CHECK(c.latency_ms == 99);
  CHECK(c.data == R"({"v":2})");
  CHECK(c.region == "weur");  // region and pool only move when not picked
  CHECK(c.pool == "default");
  CHECK(Name(pool.Release(Tenant("t1"), s.session.session_id, s.session.token).outcome) == "ok");
  pool.Add({Spec("c1", "eeur", "other", 99)});
  c = pool.Get("c1");
  CHECK(c.region == "eeur");
  CHECK(c.pool == "other");
}

TEST_CASE("registry: registering a dead container that is not picked revives it") {
  Pool pool;
  pool.Add({Spec("c1", "weur")});
  pool.Exec("weur", "UPDATE containers SET status = 'dead', last_heartbeat_ms = 0 WHERE id = 'c1'");
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "no_capacity");
  pool.Add({Spec("c1", "weur")});
  auto c = pool.Get("c1");
  CHECK(c.status == "available");
  CHECK(c.last_heartbeat_ms > 0);
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "ok");
}

TEST_CASE("registry: moving a container to a region of another shard is a conflict") {
  Pool pool({}, 3);
  REQUIRE(pool.map().ShardOf("weur") != pool.map().ShardOf("eeur"));
  pool.Add({Spec("c1", "weur")});
  auto r = pool.Register({Spec("c1", "eeur")});
  CHECK(Name(r.outcome) == "conflict");
  CHECK_THAT(r.message, Catch::Contains("c1"));
  CHECK(pool.Get("c1").region == "weur");
  // Containers of several shards in one call are all written.
  auto many = pool.Register({Spec("a", "weur"), Spec("b", "eeur"), Spec("c", "wnam")});
  CHECK(Name(many.outcome) == "ok");
  CHECK(many.count == 3);
  CHECK(pool.Get("b").region == "eeur");
  CHECK(pool.Get("c").region == "wnam");
}

TEST_CASE("registry: draining an available container takes it out of the pool at once") {
  Pool pool;
  pool.Add({Spec("c1", "weur")});
  auto r = pool.Drain("c1");
  CHECK(Name(r.outcome) == "ok");
  CHECK(pool.Get("c1").status == "draining");
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "no_capacity");
  CHECK(Name(pool.Drain("nope").outcome) == "not_found");
}

TEST_CASE("registry: removing a picked container is a conflict, an unpicked one goes") {
  Pool pool;
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur")});
  auto s = pool.Claim(Req("weur"));
  REQUIRE(s.outcome == Outcome::kOk);
  const std::string picked = s.session.container_id;
  const std::string free = picked == "c1" ? "c2" : "c1";

  auto r = pool.Remove(picked);
  CHECK(Name(r.outcome) == "conflict");
  CHECK_FALSE(r.message.empty());
  CHECK(pool.Get(picked).status == "picked");
  CHECK(Name(pool.alloc().GetSession(Tenant("t1"), s.session.session_id).outcome) == "ok");

  CHECK(Name(pool.Remove(free).outcome) == "ok");
  CHECK(Name(pool.storage().GetContainer(free).outcome) == "not_found");
  CHECK(Name(pool.Remove(free).outcome) == "not_found");

  REQUIRE(pool.Release(Tenant("t1"), s.session.session_id, s.session.token).outcome ==
          Outcome::kOk);
  CHECK(Name(pool.Remove(picked).outcome) == "ok");
}

TEST_CASE("registry: with several shards, drain and remove find the container's shard") {
  Pool pool({}, 3);
  pool.Add({Spec("w", "weur"), Spec("e", "eeur"), Spec("n", "wnam")});
  CHECK(Name(pool.Drain("e").outcome) == "ok");
  CHECK(pool.Get("e").status == "draining");
  CHECK(Name(pool.Remove("n").outcome) == "ok");
  CHECK(Name(pool.storage().GetContainer("n").outcome) == "not_found");
  CHECK(Name(pool.Remove("n").outcome) == "not_found");
  CHECK(Name(pool.Drain("n").outcome) == "not_found");
}

namespace {

// How many shard files of `pool` hold a row for `id`.
int Copies(Pool& pool, const std::string& id) {
  int copies = 0;
  for (int i = 0; i < pool.map().shards(); ++i) {
    int64_t n = 0;
    REQUIRE(pool.shard(i)->reads->With([&](store::Db* db) {
      store::Status s;
      store::StatementRef q;
      RETURN_IF_ERROR(db->Cached("SELECT count(*) FROM containers WHERE id = ?1", &q));
      q->Bind(1, id);
      bool row = false;
      s = q->Step(&row);
      n = q->ColumnInt64(0);
      return s;
    }).ok());
    copies += static_cast<int>(n);
  }
  return copies;
}

}  // namespace

TEST_CASE("registry: one id given twice in one call, in regions of two shards, is not stored twice") {
  // A container lives in exactly one shard (docs/design.md). Bug: Register looks
  // each id up in the committed shards only, so the same new id twice in one
  // call, in regions of different shards, is inserted into both files.
  Pool pool({}, 3);
  REQUIRE(pool.map().ShardOf("weur") != pool.map().ShardOf("eeur"));
  auto r = pool.Register({Spec("twin", "weur"), Spec("twin", "eeur")});
  INFO(Name(r.outcome) << " " << r.message);
  CHECK(Copies(pool, "twin") <= 1);
}

// Issue #11, defect 1: a fencing token never repeats for a container id, also
// after the id is deleted and registered again, in its shard or another.
TEST_CASE("registry: a container deleted and registered again gets tokens above its old ones") {
  for (const int shards : {1, 3}) {
    DYNAMIC_SECTION("shards " << shards) {
      Pool pool({}, shards);
      pool.Add({Spec("c-1", "weur")});
      int64_t last = 0;
      for (int i = 0; i < 3; ++i) {
        auto s = pool.Claim(Req("weur"));
        REQUIRE(s.outcome == Outcome::kOk);
        CHECK(s.session.token > last);
        last = s.session.token;
        REQUIRE(pool.Release(Tenant("t1"), s.session.session_id, s.session.token).outcome ==
                Outcome::kOk);
      }
      REQUIRE(last == 3);
      REQUIRE(Name(pool.Remove("c-1").outcome) == "ok");
      // Back in the same region, then (deleted again) in another shard's.
      for (const char* region : {"weur", "eeur"}) {
        pool.Add({Spec("c-1", region)});
        auto s = pool.Claim(Req(region));
        REQUIRE(s.outcome == Outcome::kOk);
        INFO("region " << region << " token " << s.session.token << " last " << last);
        CHECK(s.session.token > last);
        last = s.session.token;
        REQUIRE(pool.Release(Tenant("t1"), s.session.session_id, s.session.token).outcome ==
                Outcome::kOk);
        REQUIRE(Name(pool.Remove("c-1").outcome) == "ok");
      }
    }
  }
}


// Issue #11, defect 5: with several shards a lookup that fails is storage
// trouble, never "no such container" (which would let a registration put the
// id into a second shard, or answer 404 for a container that exists).
TEST_CASE("registry: with several shards, a failed lookup is an error, not an unknown container") {
  testing::TempDir elsewhere;
  Pool pool({}, 3);
  const int weur = pool.map().ShardOf("weur");
  const int eeur = pool.map().ShardOf("eeur");
  REQUIRE(weur != eeur);
  pool.Add({Spec("c-1", "weur")});
  testing::BrokenReads broken(pool.shard(weur), elsewhere.File("missing.db"));
  std::vector<store::Shard*> shards;
  for (int i = 0; i < 3; ++i) shards.push_back(i == weur ? &broken.shard : pool.shard(i));
  store::SqliteStorage registry(shards, pool.map(), {});
  auto call = [&](auto fn) {
    std::promise<store::ContainerResult> p;
    auto f = p.get_future();
    fn([&p](store::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  };
  auto moved = call([&](auto done) { registry.Register({Spec("c-1", "eeur")}, done); });
  CHECK(Name(moved.outcome) == "error");
  CHECK(Name(call([&](auto done) { registry.Drain("c-1", done); }).outcome) == "error");
  CHECK(Name(call([&](auto done) { registry.Remove("c-1", done); }).outcome) == "error");
  // Nothing was written to another shard.
  CHECK(Name(pool.storage().GetContainer("c-1").outcome) == "ok");
  CHECK(pool.Get("c-1").region == "weur");
}

// Issue #11, defect 6: with several shards, registrations run one at a time
// across processes. Another process's registration holds `<db>.register.lock`
// (an flock on another open file is what another process would hold).
TEST_CASE("registry: with several shards, a registration waits while another process registers") {
  Pool pool({}, 3);
  std::unique_ptr<store::WriteLock> other;
  REQUIRE(store::WriteLock::Open(pool.map().base_path() + ".register.lock", "other", &other).ok());
  REQUIRE(other->Acquire(1000).ok());
  auto result = std::async(std::launch::async, [&] { return pool.Register({Spec("x", "eeur")}); });
  CHECK(result.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  other->Release();
  REQUIRE(result.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(Name(result.get().outcome) == "ok");
}

// Issue #11, defect 6, as a race: two registries on the same files (each
// with its own lock file handle, as two processes have) register the same
// new ids into regions of different shards at the same moment. Each id must
// end up in one shard only.
TEST_CASE("registry: two registries racing with one new id into two shards store it once") {
  Pool pool({}, 3);
  const int weur = pool.map().ShardOf("weur");
  const int eeur = pool.map().ShardOf("eeur");
  REQUIRE(weur != eeur);
  std::vector<store::Shard*> shards;
  for (int i = 0; i < 3; ++i) shards.push_back(pool.shard(i));
  store::SqliteStorage second(shards, pool.map(), {});
  constexpr int kRounds = 40;
  for (int round = 0; round < kRounds; ++round) {
    const std::string id = "race-" + std::to_string(round);
    std::promise<void> go;
    std::shared_future<void> start = go.get_future().share();
    auto one = std::async(std::launch::async, [&] {
      start.wait();
      return pool.Register({Spec(id, "weur")});
    });
    auto two = std::async(std::launch::async, [&] {
      start.wait();
      std::promise<store::ContainerResult> p;
      auto f = p.get_future();
      second.Register({Spec(id, "eeur")},
                      [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
      return f.get();
    });
    go.set_value();
    const auto a = one.get();
    const auto b = two.get();
    INFO("round " << round << ": " << Name(a.outcome) << ", " << Name(b.outcome));
    REQUIRE(Copies(pool, id) == 1);
    CHECK((a.outcome == Outcome::kOk) != (b.outcome == Outcome::kOk));
  }
}
