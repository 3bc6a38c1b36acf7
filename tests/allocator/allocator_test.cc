#include "allocator/allocator.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "store/sqlite/db.h"
#include "tests/support/await.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_storage.h"
#include "tests/support/pool_fixture.h"
#include "tests/support/broken_reads.h"
#include "tests/support/temp_dir.h"
#include "tests/support/waiting_claims.h"

namespace {

using allocator::AllocatorOptions;
using store::Outcome;
using store::SessionResult;
using testing::ClaimAsync;
using testing::Eventually;
using testing::Pending;
using testing::Pool;
using testing::Req;
using testing::RetryEvery;
using testing::Spec;
using testing::Tenant;
using testing::Waiting;

std::string Name(Outcome o) { return store::OutcomeName(o); }

// Sleeps until the wall clock (which leases use) is past `ms`.
void SleepPast(int64_t ms) {
  while (base::NowMs() <= ms) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

TEST_CASE("claim: picks only a healthy available container of the right region and pool") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("good", "weur", "chrome", 50, R"({"endpoint":"ws://10.0.0.5:9222"})"),
            Spec("draining", "weur", "chrome", 1), Spec("dead", "weur", "chrome", 1),
            Spec("stale", "weur", "chrome", 1), Spec("other-region", "eeur", "chrome", 1),
            Spec("other-pool", "weur", "firefox", 1)});
  REQUIRE(pool.Drain("draining").outcome == Outcome::kOk);
  pool.Exec("weur", "UPDATE containers SET status = 'dead' WHERE id = 'dead'");
  // Last heartbeat a minute ago, over dead_after_ms (30 s), though still 'available'.
  pool.Exec("weur", "UPDATE containers SET last_heartbeat_ms = last_heartbeat_ms - 60000 "
                    "WHERE id = 'stale'");

  const int64_t before = base::NowMs();
  auto req = Req("weur", "t1", "chrome");
  req.lease_ms = 30000;
  SessionResult r = pool.Claim(req);
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.session.container_id == "good");
  CHECK(r.session.region == "weur");
  CHECK(r.session.pool == "chrome");
  CHECK(r.session.data == R"({"endpoint":"ws://10.0.0.5:9222"})");
  CHECK_THAT(r.session.session_id, Catch::StartsWith("s_"));
  CHECK(r.session.lease_expires_at_ms >= before + 30000);
  CHECK(r.session.lease_expires_at_ms <= base::NowMs() + 30000);
  auto info = pool.Get("good");
  CHECK(info.status == "picked");
  CHECK(info.generation == r.session.token);
  REQUIRE(info.session_id.has_value());
  CHECK(*info.session_id == r.session.session_id);

  // Nothing else fits, however often we ask.
  for (int i = 0; i < 10; ++i) {
    SessionResult none = pool.Claim(req);
    CHECK(Name(none.outcome) == "no_capacity");
    CHECK_FALSE(none.message.empty());
  }
  for (const char* id : {"draining", "dead", "stale", "other-region", "other-pool"}) {
    INFO(id);
    CHECK(pool.Get(id).status != "picked");
  }
  CHECK(pool.alloc().stats().claims_ok.load() == 1);
  CHECK(pool.alloc().stats().claims_no_capacity.load() == 10);
}

TEST_CASE("claim: an empty pool or an unknown region gives no_capacity") {
  Pool pool(EDGEALLOC_ENGINES);
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "no_capacity");
  pool.Add({Spec("c1", "weur")});
  CHECK(Name(pool.Claim(Req("nowhere")).outcome) == "no_capacity");
  CHECK(Name(pool.Claim(Req("weur", "t1", "other-pool")).outcome) == "no_capacity");
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "ok");
}

TEST_CASE("claim: counted by pool, ok where served (a fallback too), no_capacity where asked") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("w1", "weur", "chrome"), Spec("e1", "eeur", "chrome")});
  CHECK(Name(pool.Claim(Req("weur", "t1", "chrome")).outcome) == "ok");
  auto fallback = Req("weur", "t1", "chrome");
  fallback.fallback_regions = {"eeur"};
  SessionResult served = pool.Claim(fallback);
  REQUIRE(Name(served.outcome) == "ok");
  CHECK(served.session.region == "eeur");
  CHECK(Name(pool.Claim(Req("weur", "t1", "chrome")).outcome) == "no_capacity");
  CHECK(Name(pool.Claim(Req("nowhere", "t1", "gpu")).outcome) == "no_capacity");

  const auto counts = pool.alloc().PoolClaims();
  REQUIRE(counts.size() == 3);
  CHECK(counts.at({"weur", "chrome"}).ok == 1);
  CHECK(counts.at({"weur", "chrome"}).no_capacity == 1);
  CHECK(counts.at({"eeur", "chrome"}).ok == 1);
  CHECK(counts.at({"eeur", "chrome"}).no_capacity == 0);
  CHECK(counts.at({"nowhere", "gpu"}).no_capacity == 1);
}

TEST_CASE("claim: per-pool counts stop growing at kMaxCountedPools, the totals do not") {
  Pool pool(EDGEALLOC_ENGINES);
  const int asked = static_cast<int>(allocator::kMaxCountedPools) + 10;
  for (int i = 0; i < asked; ++i) {
    CHECK(Name(pool.Claim(Req("r" + std::to_string(i))).outcome) == "no_capacity");
  }
  CHECK(pool.alloc().PoolClaims().size() == allocator::kMaxCountedPools);
  CHECK(pool.alloc().stats().claims_no_capacity.load() == static_cast<uint64_t>(asked));
}

TEST_CASE("claim: the token grows on every claim of the same container") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  int64_t last = -1;
  std::set<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    SessionResult r = pool.Claim(Req("weur"));
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.session.token > last);
    last = r.session.token;
    ids.insert(r.session.session_id);
    REQUIRE(Name(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome) ==
            "ok");
  }
  CHECK(ids.size() == 5);  // a new session id every time
}

TEST_CASE("claim: a stale token cannot release or renew the new holder's container") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  SessionResult first = pool.Claim(Req("weur"));
  REQUIRE(first.outcome == Outcome::kOk);
  REQUIRE(pool.Release(Tenant("t1"), first.session.session_id, first.session.token).outcome ==
          Outcome::kOk);
  SessionResult second = pool.Claim(Req("weur"));
  REQUIRE(second.outcome == Outcome::kOk);
  REQUIRE(second.session.container_id == "c1");
  const std::string id = second.session.session_id;
  const int64_t old_token = first.session.token;

  SessionResult renew = pool.Renew(Tenant("t1"), id, old_token);
  CHECK(Name(renew.outcome) == "stale_token");
  SessionResult release = pool.Release(Tenant("t1"), id, old_token);
  CHECK(Name(release.outcome) == "stale_token");
  CHECK_FALSE(release.message.empty());
  CHECK(pool.Get("c1").status == "picked");
  CHECK(pool.alloc().stats().stale_tokens.load() == 2);
  // The old session itself has ended: its release, repeated, is ok again and
  // ends nothing more; a renew of it is session_ended.
  CHECK(Name(pool.Release(Tenant("t1"), first.session.session_id, old_token).outcome) == "ok");
  CHECK(Name(pool.Renew(Tenant("t1"), first.session.session_id, old_token).outcome) ==
        "session_ended");
  CHECK(pool.Get("c1").status == "picked");
  // The current token still works.
  CHECK(Name(pool.Release(Tenant("t1"), id, second.session.token).outcome) == "ok");
}

TEST_CASE("release: the right token frees the container, a second release is ok and ends nothing") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  SessionResult r = pool.Claim(Req("weur"));
  REQUIRE(r.outcome == Outcome::kOk);
  SessionResult rel = pool.Release(Tenant("t1"), r.session.session_id, r.session.token);
  CHECK(Name(rel.outcome) == "ok");
  CHECK(rel.session.session_id == r.session.session_id);
  auto info = pool.Get("c1");
  CHECK(info.status == "available");
  CHECK_FALSE(info.session_id.has_value());
  CHECK(Name(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome) == "ok");
  CHECK(Name(pool.alloc().GetSession(Tenant("t1"), r.session.session_id).outcome) ==
        "session_ended");
  CHECK(pool.alloc().stats().sessions_released.load() == 1);  // the repeat ended nothing
  // Ids the allocator never made are not_found too, never an error.
  CHECK(Name(pool.Release(Tenant("t1"), "s_nonsense", 1).outcome) == "not_found");
  CHECK(Name(pool.Release(Tenant("t1"), "", 1).outcome) == "not_found");
  CHECK(Name(pool.Renew(Tenant("t1"), "s_ffffffffffffffffffffffffffffffffff", 1).outcome) ==
        "not_found");
  CHECK(pool.alloc().stats().releases.load() == 1);
  // And the container can be claimed again.
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "ok");
}

TEST_CASE("release: another tenant's session is forbidden, an admin may release it") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  SessionResult r = pool.Claim(Req("weur", "alice"));
  REQUIRE(r.outcome == Outcome::kOk);
  const std::string id = r.session.session_id;
  const int64_t token = r.session.token;
  CHECK(Name(pool.Release(Tenant("bob"), id, token).outcome) == "forbidden");
  CHECK(Name(pool.Renew(Tenant("bob"), id, token).outcome) == "forbidden");
  CHECK(Name(pool.alloc().GetSession(Tenant("bob"), id).outcome) == "forbidden");
  CHECK(pool.Get("c1").status == "picked");

  SessionResult mine = pool.alloc().GetSession(Tenant("alice"), id);
  REQUIRE(mine.outcome == Outcome::kOk);
  CHECK(mine.session.container_id == "c1");
  CHECK(mine.session.token == token);
  CHECK(mine.session.lease_expires_at_ms == r.session.lease_expires_at_ms);

  store::Caller admin;
  admin.tenant = "ops";
  admin.admin = true;
  CHECK(Name(pool.alloc().GetSession(admin, id).outcome) == "ok");
  CHECK(Name(pool.Release(admin, id, token).outcome) == "ok");
  CHECK(pool.Get("c1").status == "available");
}

TEST_CASE("renew: extends the lease with the current token, and returns the session") {
  AllocatorOptions options;
  options.default_lease_ms = 1000;
  Pool pool(EDGEALLOC_ENGINES, options);
  pool.Add({Spec("c1", "weur", "default", 0, R"({"x":1})")});
  SessionResult r = pool.Claim(Req("weur"));
  REQUIRE(r.outcome == Outcome::kOk);
  const int64_t before = base::NowMs();
  SessionResult renewed = pool.Renew(Tenant("t1"), r.session.session_id, r.session.token, 600000);
  INFO(renewed.message);
  REQUIRE(renewed.outcome == Outcome::kOk);
  CHECK(renewed.session.lease_expires_at_ms >= before + 600000);
  CHECK(renewed.session.token == r.session.token);  // renew is not a claim
  CHECK(renewed.session.container_id == "c1");
  CHECK(renewed.session.data == R"({"x":1})");
  CHECK(pool.alloc().GetSession(Tenant("t1"), r.session.session_id).session.lease_expires_at_ms ==
        renewed.session.lease_expires_at_ms);
  CHECK(pool.alloc().stats().renewals.load() == 1);
}

TEST_CASE("candidates: with K=1 the lowest-latency container is always picked") {
  Pool pool(EDGEALLOC_ENGINES, {}, testing::Policy(/*candidates=*/1));
  std::vector<store::ContainerSpec> specs;
  for (int i = 10; i >= 1; --i) specs.push_back(Spec("c" + std::to_string(i), "weur", "default", i * 10));
  pool.Add(specs);
  for (int i = 0; i < 30; ++i) {
    SessionResult r = pool.Claim(Req("weur"));
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.session.container_id == "c1");
    REQUIRE(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome ==
            Outcome::kOk);
  }
  // While c1 is held, K=1 moves on to the next best.
  SessionResult held = pool.Claim(Req("weur"));
  REQUIRE(held.session.container_id == "c1");
  CHECK(pool.Claim(Req("weur")).session.container_id == "c2");
}

TEST_CASE("candidates: with K=5 only the 5 lowest-latency containers are ever picked, at random") {
  Pool pool(EDGEALLOC_ENGINES, {}, testing::Policy(/*candidates=*/5));
  std::vector<store::ContainerSpec> specs;
  for (int i = 1; i <= 12; ++i) specs.push_back(Spec("c" + std::to_string(i), "weur", "default", i));
  pool.Add(specs);
  std::map<std::string, int> picks;
  for (int i = 0; i < 150; ++i) {
    SessionResult r = pool.Claim(Req("weur"));
    REQUIRE(r.outcome == Outcome::kOk);
    ++picks[r.session.container_id];
    REQUIRE(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome ==
            Outcome::kOk);
  }
  const std::set<std::string> best = {"c1", "c2", "c3", "c4", "c5"};
  for (const auto& [id, n] : picks) {
    INFO(id << " picked " << n << " times");
    CHECK(best.count(id) == 1);
  }
  // Random among the five: 150 draws all landing on fewer than 3 of them
  // would mean the spread is gone (odds ~1e-25 if it is uniform).
  CHECK(picks.size() >= 3);
}

TEST_CASE("quota: the tenant's third claim is quota_exceeded, others are unaffected, a release makes room") {
  Pool pool(EDGEALLOC_ENGINES, {}, testing::Policy(5, /*max_sessions_per_tenant=*/2));
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur"), Spec("c3", "weur"), Spec("c4", "weur"),
            Spec("c5", "weur")});
  SessionResult a1 = pool.Claim(Req("weur", "alice"));
  SessionResult a2 = pool.Claim(Req("weur", "alice"));
  REQUIRE(a1.outcome == Outcome::kOk);
  REQUIRE(a2.outcome == Outcome::kOk);
  SessionResult a3 = pool.Claim(Req("weur", "alice"));
  CHECK(Name(a3.outcome) == "quota_exceeded");
  CHECK_THAT(a3.message, Catch::Contains("alice"));
  CHECK(pool.alloc().stats().claims_quota.load() == 1);

  CHECK(Name(pool.Claim(Req("weur", "bob")).outcome) == "ok");
  CHECK(Name(pool.Claim(Req("weur", "bob")).outcome) == "ok");
  CHECK(Name(pool.Claim(Req("weur", "bob")).outcome) == "quota_exceeded");

  REQUIRE(pool.Release(Tenant("alice"), a1.session.session_id, a1.session.token).outcome ==
          Outcome::kOk);
  CHECK(Name(pool.Claim(Req("weur", "alice")).outcome) == "ok");
  // Pool now: 4 picked, 1 free, alice at her quota.
  CHECK(Name(pool.Claim(Req("weur", "alice")).outcome) == "quota_exceeded");
}

TEST_CASE("quota: with no capacity left the answer is no_capacity, not quota_exceeded") {
  Pool pool(EDGEALLOC_ENGINES, {}, testing::Policy(5, /*max_sessions_per_tenant=*/5));
  pool.Add({Spec("c1", "weur")});
  REQUIRE(pool.Claim(Req("weur", "alice")).outcome == Outcome::kOk);
  CHECK(Name(pool.Claim(Req("weur", "alice")).outcome) == "no_capacity");
}

TEST_CASE("quota: counts the tenant's sessions in every shard") {
  Pool pool({}, /*shards=*/3, {}, testing::Policy(5, /*max_sessions_per_tenant=*/2));
  // weur, eeur and wnam live in three different shards of three.
  REQUIRE(pool.map().ShardOf("weur") != pool.map().ShardOf("eeur"));
  REQUIRE(pool.map().ShardOf("eeur") != pool.map().ShardOf("wnam"));
  REQUIRE(pool.map().ShardOf("weur") != pool.map().ShardOf("wnam"));
  pool.Add({Spec("w1", "weur"), Spec("e1", "eeur"), Spec("n1", "wnam"), Spec("n2", "wnam")});
  CHECK(Name(pool.Claim(Req("weur", "alice")).outcome) == "ok");
  CHECK(Name(pool.Claim(Req("eeur", "alice")).outcome) == "ok");
  CHECK(Name(pool.Claim(Req("wnam", "alice")).outcome) == "quota_exceeded");
  CHECK(Name(pool.Claim(Req("wnam", "bob")).outcome) == "ok");
}

// Issue #11, defect 5: with several shards, the claim reads the other
// shards' share of the quota and looks for the idempotency key's session in
// every shard. A read that fails there is storage trouble: claiming anyway
// could pass the quota or make a second session for one key.
TEST_CASE("quota and idempotency: a failed read of another shard fails the claim, claims nothing") {
  const store::ClaimPolicy policy = testing::Policy(5, /*max_sessions_per_tenant=*/1);
  testing::TempDir elsewhere;
  Pool pool({}, /*shards=*/3, {}, policy);
  const int weur = pool.map().ShardOf("weur");
  const int eeur = pool.map().ShardOf("eeur");
  REQUIRE(weur != eeur);
  pool.Add({Spec("w1", "weur"), Spec("e1", "eeur")});
  store::ClaimRequest keyed = Req("eeur", "alice");
  keyed.idempotency_key = "k-1";
  auto first = pool.Claim(keyed);
  REQUIRE(first.outcome == Outcome::kOk);  // alice's one session, in eeur's shard

  testing::BrokenReads broken(pool.shard(eeur), elsewhere.File("missing.db"));
  std::vector<store::Shard*> shards;
  for (int i = 0; i < 3; ++i) shards.push_back(i == eeur ? &broken.shard : pool.shard(i));
  store::SqliteStorage storage(shards, pool.map(), policy);
  allocator::Allocator alloc(&storage, {});
  auto claim = [&](store::ClaimRequest req) {
    std::promise<store::SessionResult> p;
    auto f = p.get_future();
    alloc.Claim(std::move(req), [&p](store::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  };
  // The quota: eeur's share cannot be read, so weur must not be claimed.
  CHECK(Name(claim(Req("weur", "alice")).outcome) == "error");
  // The key: its session in eeur cannot be looked for, so no second one.
  store::ClaimRequest again = Req("weur", "alice");
  again.idempotency_key = "k-1";
  CHECK(Name(claim(again).outcome) == "error");
  CHECK(pool.Get("w1").status == "available");
}

TEST_CASE("idempotency: the same tenant and key replay the same session and claim nothing more") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur"), Spec("c3", "weur")});
  auto req = Req("weur", "alice");
  req.idempotency_key = "req-7f3a";
  SessionResult first = pool.Claim(req);
  REQUIRE(first.outcome == Outcome::kOk);
  SessionResult again = pool.Claim(req);
  CHECK(Name(again.outcome) == "replayed");
  CHECK(again.session.session_id == first.session.session_id);
  CHECK(again.session.container_id == first.session.container_id);
  CHECK(again.session.token == first.session.token);
  CHECK(again.session.lease_expires_at_ms == first.session.lease_expires_at_ms);
  CHECK(pool.alloc().stats().claims_replayed.load() == 1);

  // Another tenant with the same key gets a session of its own.
  auto bob = Req("weur", "bob");
  bob.idempotency_key = "req-7f3a";
  SessionResult other = pool.Claim(bob);
  CHECK(Name(other.outcome) == "ok");
  CHECK(other.session.session_id != first.session.session_id);
  CHECK(other.session.container_id != first.session.container_id);
  // One container is still free: only two were claimed.
  CHECK(Name(pool.Claim(Req("weur", "carol")).outcome) == "ok");
  CHECK(Name(pool.Claim(Req("weur", "carol")).outcome) == "no_capacity");
}

TEST_CASE("idempotency: concurrent duplicates come out as exactly one session") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur"), Spec("c3", "weur"), Spec("c4", "weur")});
  constexpr int kThreads = 16;
  std::vector<SessionResult> results(kThreads);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto req = Req("weur", "alice");
      req.idempotency_key = "dup";
      while (!go.load()) std::this_thread::yield();
      results[i] = pool.Claim(req);
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  std::set<std::string> sessions;
  int ok = 0, replayed = 0;
  for (const SessionResult& r : results) {
    INFO(Name(r.outcome) << " " << r.message);
    CHECK((r.outcome == Outcome::kOk || r.outcome == Outcome::kReplayed));
    ok += r.outcome == Outcome::kOk;
    replayed += r.outcome == Outcome::kReplayed;
    sessions.insert(r.session.session_id);
  }
  CHECK(ok == 1);
  CHECK(replayed == kThreads - 1);
  CHECK(sessions.size() == 1);
  int picked = 0;
  for (const char* id : {"c1", "c2", "c3", "c4"}) picked += pool.Get(id).status == "picked";
  CHECK(picked == 1);
}

TEST_CASE("idempotency: after release the key claims anew") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  auto req = Req("weur", "alice");
  req.idempotency_key = "k";
  SessionResult first = pool.Claim(req);
  REQUIRE(first.outcome == Outcome::kOk);
  REQUIRE(pool.Release(Tenant("alice"), first.session.session_id, first.session.token).outcome ==
          Outcome::kOk);
  SessionResult second = pool.Claim(req);
  CHECK(Name(second.outcome) == "ok");
  CHECK(second.session.session_id != first.session.session_id);
  CHECK(second.session.token > first.session.token);
}

TEST_CASE("idempotency: a session whose lease is over is not replayed, even before the reaper ran") {
  // docs/api.md: a retry returns the same session "while that session lives".
  // Bug: kFindIdempotent does not look at lease_expires_at_ms, so until the
  // reaper frees the row a retry is answered with an expired session (which
  // GET already calls not_found).
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur")});
  auto req = Req("weur", "alice");
  req.idempotency_key = "k";
  req.lease_ms = 30;
  SessionResult first = pool.Claim(req);
  REQUIRE(first.outcome == Outcome::kOk);
  SleepPast(first.session.lease_expires_at_ms);
  REQUIRE(Name(pool.alloc().GetSession(Tenant("alice"), first.session.session_id).outcome) ==
          "session_ended");
  SessionResult retry = pool.Claim(req);
  INFO(retry.message);
  CHECK(Name(retry.outcome) == "ok");
  CHECK(retry.session.session_id != first.session.session_id);
  // A lease of its own, begun after the first's end (not "> now": a claim
  // on a loaded machine may take longer than the 30 ms lease).
  CHECK(retry.session.lease_expires_at_ms > first.session.lease_expires_at_ms);
}

TEST_CASE("lease: an expired session is freed by ReapExpiredLeases and is session_ended after") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  auto req = Req("weur");
  req.lease_ms = 400;  // long enough that the "not yet" checks below run well inside it
  SessionResult r = pool.Claim(req);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(Name(pool.alloc().GetSession(Tenant("t1"), r.session.session_id).outcome) == "ok");
  CHECK(pool.alloc().ReapExpiredLeases() == 0);  // not yet over
  CHECK(pool.Get("c1").status == "picked");

  SleepPast(r.session.lease_expires_at_ms);
  CHECK(Name(pool.alloc().GetSession(Tenant("t1"), r.session.session_id).outcome) ==
        "session_ended");
  CHECK(Name(pool.Renew(Tenant("t1"), r.session.session_id, r.session.token).outcome) ==
        "session_ended");
  const uint64_t expiries = pool.alloc().stats().lease_expiries.load();
  CHECK(pool.alloc().ReapExpiredLeases() == 1);
  CHECK(pool.alloc().stats().lease_expiries.load() == expiries + 1);
  auto info = pool.Get("c1");
  CHECK(info.status == "available");
  CHECK_FALSE(info.session_id.has_value());
  const SessionResult release = pool.Release(Tenant("t1"), r.session.session_id, r.session.token);
  CHECK(Name(release.outcome) == "session_ended");
  CHECK(release.end.reason == "expired");
  CHECK(pool.alloc().ReapExpiredLeases() == 0);
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "ok");
}

TEST_CASE("lease: the reaper thread frees expired leases on its own after Start") {
  AllocatorOptions options;
  options.reaper_interval_ms = 20;
  Pool pool(EDGEALLOC_ENGINES, options);
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur")});
  pool.alloc().Start();
  // The long lease first: claimed second, it could take the short one's
  // container back after the reaper freed it.
  auto long_req = Req("weur");
  long_req.lease_ms = 600000;
  SessionResult keep = pool.Claim(long_req);
  REQUIRE(keep.outcome == Outcome::kOk);
  auto short_req = Req("weur");
  short_req.lease_ms = 50;
  SessionResult r = pool.Claim(short_req);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(Eventually([&] { return pool.Get(r.session.container_id).status == "available"; }));
  // The counter moves after the sweep's commit, on the reaper thread.
  CHECK(Eventually([&] { return pool.alloc().stats().lease_expiries.load() >= 1; }));
  CHECK(pool.Get(keep.session.container_id).status == "picked");  // a live lease is kept
  CHECK(Name(pool.alloc().GetSession(Tenant("t1"), keep.session.session_id).outcome) == "ok");
  pool.alloc().Stop();
  pool.alloc().Stop();  // idempotent
}

TEST_CASE("lease: a sweep frees a backlog larger than one batch") {
  AllocatorOptions options;
  options.reaper_batch_rows = 3;
  Pool pool(EDGEALLOC_ENGINES, options);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 10; ++i) specs.push_back(Spec("c" + std::to_string(i), "weur"));
  pool.Add(specs);
  int64_t latest = 0;
  for (int i = 0; i < 10; ++i) {
    auto req = Req("weur");
    req.lease_ms = 20;
    SessionResult r = pool.Claim(req);
    REQUIRE(r.outcome == Outcome::kOk);
    latest = std::max(latest, r.session.lease_expires_at_ms);
  }
  SleepPast(latest);
  CHECK(pool.alloc().ReapExpiredLeases() == 10);
  for (int i = 0; i < 10; ++i) CHECK(pool.Get("c" + std::to_string(i)).status == "available");
}

TEST_CASE("fallback: an exhausted region falls back to the next regions in order") {
  for (int shards : {1, 3}) {
    INFO("shards " << shards);
    Pool pool({}, shards);
    pool.Add({Spec("w1", "weur"), Spec("e1", "eeur"), Spec("n1", "wnam")});
    auto req = Req("weur");
    req.fallback_regions = {"eeur", "wnam"};
    std::vector<std::string> got;
    std::vector<SessionResult> sessions;
    for (int i = 0; i < 3; ++i) {
      SessionResult r = pool.Claim(req);
      INFO(r.message);
      REQUIRE(r.outcome == Outcome::kOk);
      got.push_back(r.session.container_id + "@" + r.session.region);
      sessions.push_back(r);
    }
    CHECK(got == std::vector<std::string>{"w1@weur", "e1@eeur", "n1@wnam"});
    SessionResult none = pool.Claim(req);
    CHECK(Name(none.outcome) == "no_capacity");
    CHECK_THAT(none.message, Catch::Contains("fallback"));
    // A session found through a fallback is read and released in its own shard.
    for (const SessionResult& r : sessions) {
      CHECK(Name(pool.alloc().GetSession(Tenant("t1"), r.session.session_id).outcome) == "ok");
      CHECK(Name(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome) ==
            "ok");
    }
    CHECK(pool.Claim(req).session.container_id == "w1");
  }
}

TEST_CASE("fallback: an empty region before a full one is skipped") {
  Pool pool({}, 3);
  pool.Add({Spec("n1", "wnam")});
  auto req = Req("weur");
  req.fallback_regions = {"nowhere", "eeur", "wnam"};
  SessionResult r = pool.Claim(req);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.session.container_id == "n1");
  CHECK(r.session.region == "wnam");
  SessionResult got = pool.alloc().GetSession(Tenant("t1"), r.session.session_id);
  CHECK(Name(got.outcome) == "ok");
  CHECK(Name(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome) == "ok");
}

TEST_CASE("drain: a picked container asked to drain becomes draining on release and is not claimed") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  SessionResult r = pool.Claim(Req("weur"));
  REQUIRE(r.outcome == Outcome::kOk);
  REQUIRE(Name(pool.Drain("c1").outcome) == "ok");
  auto info = pool.Get("c1");
  CHECK(info.status == "picked");  // the holder keeps it
  CHECK(info.drain_requested);
  REQUIRE(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome ==
          Outcome::kOk);
  info = pool.Get("c1");
  CHECK(info.status == "draining");
  CHECK(info.drain_requested);  // an operator's drain holds until undrain
  CHECK(Name(pool.Claim(Req("weur")).outcome) == "no_capacity");
}

TEST_CASE("drain: a picked container whose lease expires after a drain request becomes draining") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("c1", "weur")});
  auto req = Req("weur");
  req.lease_ms = 20;
  SessionResult r = pool.Claim(req);
  REQUIRE(r.outcome == Outcome::kOk);
  REQUIRE(pool.Drain("c1").outcome == Outcome::kOk);
  SleepPast(r.session.lease_expires_at_ms);
  CHECK(pool.alloc().ReapExpiredLeases() == 1);
  CHECK(pool.Get("c1").status == "draining");
}

TEST_CASE("concurrency: many threads claiming and releasing never share a container or a token") {
  Pool pool(EDGEALLOC_ENGINES);
  constexpr int kContainers = 4;
  constexpr int kThreads = 16;
  const auto kRunFor = std::chrono::milliseconds(2500);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < kContainers; ++i) specs.push_back(Spec("c" + std::to_string(i), "weur"));
  pool.Add(specs);

  std::mutex mu;
  std::map<std::string, std::string> holders;          // container -> session; GUARDED_BY(mu)
  std::set<std::pair<std::string, int64_t>> handed;    // (container, token); GUARDED_BY(mu)
  std::atomic<int> double_holders{0}, reused_tokens{0}, bad_releases{0}, errors{0};
  std::atomic<int> claims{0}, no_capacity{0};
  const auto deadline = std::chrono::steady_clock::now() + kRunFor;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string tenant = "tenant-" + std::to_string(t % 4);
      while (std::chrono::steady_clock::now() < deadline) {
        SessionResult r = pool.Claim(Req("weur", tenant));
        if (r.outcome == Outcome::kNoCapacity) {
          ++no_capacity;
          std::this_thread::yield();
          continue;
        }
        if (r.outcome != Outcome::kOk) {
          ++errors;
          continue;
        }
        ++claims;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!holders.emplace(r.session.container_id, r.session.session_id).second) {
            ++double_holders;
          }
          if (!handed.emplace(r.session.container_id, r.session.token).second) ++reused_tokens;
        }
        if (t % 2 == 0) {
          // Half the threads also renew while they hold it.
          SessionResult renewed = pool.Renew(Tenant(tenant), r.session.session_id, r.session.token);
          if (renewed.outcome != Outcome::kOk) ++bad_releases;
        }
        {
          // Erased before the release: once released, another thread may
          // legitimately hold it before we get the lock back.
          std::lock_guard<std::mutex> lock(mu);
          holders.erase(r.session.container_id);
        }
        SessionResult rel = pool.Release(Tenant(tenant), r.session.session_id, r.session.token);
        if (rel.outcome != Outcome::kOk) ++bad_releases;
      }
    });
  }
  for (auto& th : threads) th.join();
  INFO("claims " << claims.load() << ", no_capacity " << no_capacity.load());
  CHECK(double_holders.load() == 0);
  CHECK(reused_tokens.load() == 0);
  CHECK(bad_releases.load() == 0);
  CHECK(errors.load() == 0);
  CHECK(claims.load() >= 100);  // it really ran concurrently, many times
  CHECK(no_capacity.load() > 0);  // 16 threads over 4 containers did contend
  for (int i = 0; i < kContainers; ++i) {
    CHECK(pool.Get("c" + std::to_string(i)).status == "available");
  }
}

TEST_CASE("overload: a full write queue answers overloaded at once, exactly once, and claims nothing") {
  store::WriterOptions writer_options;
  writer_options.max_queued_jobs = 1;
  Pool pool({}, 1, writer_options);
  pool.Add({Spec("c1", "weur"), Spec("c2", "weur")});
  SessionResult held = pool.Claim(Req("weur"));
  REQUIRE(held.outcome == Outcome::kOk);

  // Hold the writer thread inside a job, then fill the one queue slot.
  std::promise<void> inside, release;
  auto gate = release.get_future().share();
  std::thread blocker([&] {
    (void)pool.shard(0)->writer->RunSync([&](store::Db*) {
      inside.set_value();
      gate.wait();
      return store::Status::Ok();
    });
  });
  inside.get_future().wait();
  // Fill the queue, whether or not the job in flight counts against it.
  struct NoopJob : store::WriteJob {
    store::Status Apply(store::Db*) override { return store::Status::Ok(); }
    void Done(store::Status) override {}
  };
  int filled = 0;
  while (filled < 10 && pool.shard(0)->writer->Submit(std::make_unique<NoopJob>())) ++filled;
  REQUIRE(filled <= 1);

  std::atomic<int> calls{0};
  SessionResult refused;
  pool.alloc().Claim(Req("weur", "refused"), [&](SessionResult r) {
    ++calls;
    refused = std::move(r);
  });
  CHECK(calls.load() == 1);  // answered on the caller's thread, before any commit
  CHECK(Name(refused.outcome) == "overloaded");
  std::atomic<int> release_calls{0};
  SessionResult refused_release;
  pool.alloc().Release(Tenant("t1"), held.session.session_id, held.session.token,
                       [&](SessionResult r) {
                         ++release_calls;
                         refused_release = std::move(r);
                       });
  CHECK(release_calls.load() == 1);
  CHECK(Name(refused_release.outcome) == "overloaded");

  release.set_value();
  blocker.join();
  // The filler job must leave the queue before the next claim fits in it.
  while (pool.shard(0)->writer->stats().queued.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(Name(pool.Claim(Req("weur", "later")).outcome) == "ok");  // c2 was never claimed
  CHECK(calls.load() == 1);  // the refused job never ran later
  CHECK(release_calls.load() == 1);
  CHECK(pool.Get(held.session.container_id).status == "picked");  // the refused release did nothing
}

namespace {

// --- Session ids (#12) --------------------------------------------------------
//
// Whether the ids come from the kernel cannot be seen from outside; what can be
// tested is the format, uniqueness, and that they are not the outputs of an
// mt19937_64 (the generator they came from before #12): 312 consecutive
// outputs of one give away its whole state and so every later output.

uint64_t Temper64(uint64_t y) {
  y ^= (y >> 29) & 0x5555555555555555ULL;
  y ^= (y << 17) & 0x71D67FFFEDA60000ULL;
  y ^= (y << 37) & 0xFFF7EEE000000000ULL;
  y ^= (y >> 43);
  return y;
}

uint64_t Untemper64(uint64_t y) {
  y ^= (y >> 43);
  y ^= (y << 37) & 0xFFF7EEE000000000ULL;
  uint64_t x = y;
  for (int i = 0; i < 4; ++i) x = y ^ ((x << 17) & 0x71D67FFFEDA60000ULL);
  y = x;
  for (int i = 0; i < 3; ++i) x = y ^ ((x >> 29) & 0x5555555555555555ULL);
  return x;
}

// From 312 consecutive outputs of an mt19937_64, its next two outputs.
std::pair<uint64_t, uint64_t> PredictMt64(const std::vector<uint64_t>& out) {
  std::vector<uint64_t> x;
  for (uint64_t o : out) x.push_back(Untemper64(o));
  auto next = [&x](size_t k) {
    constexpr uint64_t kUpper = 0xFFFFFFFF80000000ULL, kLower = 0x7FFFFFFFULL;
    uint64_t y = (x[k] & kUpper) | (x[k + 1] & kLower);
    return x[k + 156] ^ (y >> 1) ^ ((x[k + 1] & 1) ? 0xB5026F5AA96619E9ULL : 0);
  };
  x.push_back(next(0));
  x.push_back(next(1));
  return {Temper64(x[312]), Temper64(x[313])};
}

// The two 64-bit words of a session id's 128 random bits.
std::pair<uint64_t, uint64_t> Words(const std::string& id) {
  return {std::stoull(id.substr(16, 16), nullptr, 16), std::stoull(id.substr(32, 16), nullptr, 16)};
}

bool WellFormedSessionId(const std::string& id, const char* shard) {
  if (id.size() != 48 || id.compare(0, 2, "s_") != 0 || id.compare(14, 2, shard) != 0) return false;
  for (char c : id.substr(2)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST_CASE("claim: the mt19937_64 predictor of the session id test predicts an mt19937_64") {
  // So that the next test passing means something.
  std::mt19937_64 rng(12345);
  rng.discard(1000);
  std::vector<uint64_t> out;
  for (int i = 0; i < 312; ++i) out.push_back(rng());
  auto [a, b] = PredictMt64(out);
  CHECK(a == rng());
  CHECK(b == rng());
}

TEST_CASE("claim: session ids are s_, time, shard, 128 random bits, unique, in the order made "
          "and not predictable") {
  constexpr int kIds = 157;  // 156 ids = 312 words, then the one to predict
  Pool pool(EDGEALLOC_ENGINES);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < kIds; ++i) specs.push_back(Spec("sid-" + std::to_string(i), "weur"));
  pool.Add(specs);
  std::vector<std::string> ids;
  std::set<std::string> unique;
  for (int i = 0; i < kIds; ++i) {
    SessionResult r = pool.Claim(Req("weur"));
    REQUIRE(r.outcome == Outcome::kOk);
    INFO(r.session.session_id);
    CHECK(WellFormedSessionId(r.session.session_id, "00"));
    ids.push_back(r.session.session_id);
    unique.insert(r.session.session_id);
  }
  CHECK(unique.size() == ids.size());
  // Made one after another: their times (digits 2 to 13) never go back.
  for (size_t i = 1; i < ids.size(); ++i) CHECK(ids[i - 1].substr(2, 12) <= ids[i].substr(2, 12));
  // The two words of an id were drawn in an unspecified order (function
  // arguments), so both orders are tried.
  for (bool swap : {false, true}) {
    std::vector<uint64_t> out;
    for (int i = 0; i + 1 < kIds; ++i) {
      auto [a, b] = Words(ids[i]);
      if (swap) std::swap(a, b);
      out.push_back(a);
      out.push_back(b);
    }
    auto [p, q] = PredictMt64(out);
    auto [a, b] = Words(ids.back());
    INFO("swap " << swap);
    CHECK_FALSE(((a == p && b == q) || (a == q && b == p)));
  }
}

}  // namespace

TEST_CASE("messages: a refusal names the tenant's quota, or the region and pool that are full") {
  Pool pool(EDGEALLOC_ENGINES, {}, testing::Policy(5, /*max_sessions_per_tenant=*/1));
  pool.Add({Spec("c0", "weur", "p"), Spec("c1", "weur", "p")});
  REQUIRE(pool.Claim(Req("weur", "alice", "p")).outcome == Outcome::kOk);
  SessionResult quota = pool.Claim(Req("weur", "alice", "p"));
  CHECK(quota.outcome == Outcome::kQuotaExceeded);
  CHECK_THAT(quota.message, Catch::Contains("alice") && Catch::Contains("maximum of 1"));
  REQUIRE(pool.Claim(Req("weur", "bob", "p")).outcome == Outcome::kOk);
  SessionResult none = pool.Claim(Req("weur", "carol", "p"));
  CHECK(none.outcome == Outcome::kNoCapacity);
  CHECK_THAT(none.message, Catch::Contains("pool p of region weur"));
}

// A tenant's own max_sessions (its keys-file line) is the number its refusal
// names, not --max-sessions-per-tenant's, with or without wait_ms.
TEST_CASE("messages: a quota refusal names the tenant's own max_sessions when it has one") {
  Pool pool(EDGEALLOC_ENGINES, {}, testing::Policy(5, /*max_sessions_per_tenant=*/5));
  pool.Add({Spec("c0", "weur", "p"), Spec("c1", "weur", "p"), Spec("c2", "weur", "p")});
  store::ClaimRequest req = Req("weur", "alice", "p");
  req.caller.limits.max_sessions = 2;
  REQUIRE(pool.Claim(req).outcome == Outcome::kOk);
  REQUIRE(pool.Claim(req).outcome == Outcome::kOk);
  SessionResult quota = pool.Claim(req);
  CHECK(quota.outcome == Outcome::kQuotaExceeded);
  CHECK_THAT(quota.message, Catch::Contains("alice") && Catch::Contains("maximum of 2 sessions"));
  req.wait_ms = 50;
  quota = pool.Claim(req);
  CHECK(quota.outcome == Outcome::kQuotaExceeded);
  CHECK_THAT(quota.message, Catch::Contains("maximum of 2 sessions"));
}

namespace {

std::shared_ptr<Pending> ClaimAsync(Pool& pool, store::ClaimRequest req,
                                    std::function<bool()> abandoned = {}) {
  return ClaimAsync(pool.alloc(), std::move(req), std::move(abandoned));
}

// Whether `alloc` holds n waiting claims within a few seconds.
bool WaitersReach(allocator::Allocator& alloc, int64_t n) {
  return Eventually([&] { return alloc.stats().waiting.load() == n; });
}

// Registers a container in the pool and has tenant t0 hold it: the pool
// exists (a claim for a pool nobody registered never waits) and is full.
SessionResult HoldOne(Pool& pool, const std::string& id, const std::string& region = "weur",
                      const std::string& name = "chrome") {
  pool.Add({Spec(id, region, name)});
  SessionResult held = pool.Claim(Req(region, "t0", name));
  REQUIRE(held.outcome == Outcome::kOk);
  return held;
}

// Tenant t0 lets go of the session HoldOne gave it, through the pool's own
// allocator; the outcome's name.
std::string ReleaseHeld(Pool& pool, const SessionResult& held) {
  return Name(pool.Release(Tenant("t0"), held.session.session_id, held.session.token).outcome);
}

}  // namespace

TEST_CASE("wait: claims that wait are served by releases, first come first served") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.alloc().Start();
  SessionResult held = HoldOne(pool, "only");

  auto first = ClaimAsync(pool, Waiting(20000, "t1"));
  REQUIRE(WaitersReach(pool.alloc(), 1));
  auto second = ClaimAsync(pool, Waiting(20000, "t2"));
  REQUIRE(WaitersReach(pool.alloc(), 2));
  // A claim that does not wait still gets its answer at once.
  CHECK(Name(pool.Claim(Req("weur", "t3", "chrome")).outcome) == "no_capacity");
  CHECK_FALSE(first->Ready());

  REQUIRE(ReleaseHeld(pool, held) == "ok");
  SessionResult got = first->future.get();
  INFO(got.message);
  REQUIRE(got.outcome == Outcome::kOk);
  CHECK(got.session.container_id == "only");
  CHECK(got.session.token > held.session.token);
  CHECK_FALSE(second->Ready());  // the second in line waits on

  REQUIRE(Name(pool.Release(Tenant("t1"), got.session.session_id, got.session.token).outcome) ==
          "ok");
  SessionResult next = second->future.get();
  REQUIRE(next.outcome == Outcome::kOk);
  CHECK(pool.alloc().stats().waits_served.load() == 2);
  CHECK(pool.alloc().stats().waiting.load() == 0);
}

TEST_CASE("wait: a waiter finds capacity that came back without a release here (the retry tick)") {
  Pool pool(EDGEALLOC_ENGINES, RetryEvery(20));
  pool.alloc().Start();
  HoldOne(pool, "held");
  auto waiting = ClaimAsync(pool, Waiting(20000));
  REQUIRE(WaitersReach(pool.alloc(), 1));
  pool.Add({Spec("late", "weur", "chrome")});  // a registration: no release to wake it
  SessionResult got = waiting->future.get();
  REQUIRE(got.outcome == Outcome::kOk);
  CHECK(got.session.container_id == "late");
}

TEST_CASE("wait: a waiter whose time runs out is no_capacity, saying how long it waited") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.alloc().Start();
  HoldOne(pool, "held");
  const int64_t before = base::NowMs();
  SessionResult r = ClaimAsync(pool, Waiting(150))->future.get();
  CHECK(Name(r.outcome) == "no_capacity");
  CHECK(base::NowMs() - before >= 150);
  CHECK_THAT(r.message, Catch::Contains("after waiting"));
  CHECK(pool.alloc().stats().waits_timed_out.load() == 1);
  CHECK(pool.alloc().stats().waiting.load() == 0);
}

// At SIGTERM (Service::Stop) waiting claims are answered at once instead of
// holding the shutdown until their time or the grace runs out, and no claim
// starts to wait after that.
TEST_CASE("wait: EndWaits answers every waiting claim at once and lets none wait after") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.alloc().Start();
  HoldOne(pool, "held");
  auto first = ClaimAsync(pool, Waiting(20000, "t1"));
  auto second = ClaimAsync(pool, Waiting(20000, "t2"));
  REQUIRE(WaitersReach(pool.alloc(), 2));
  const auto t0 = std::chrono::steady_clock::now();
  pool.alloc().EndWaits();
  REQUIRE(first->future.wait_for(std::chrono::seconds(2)) == std::future_status::ready);
  REQUIRE(second->future.wait_for(std::chrono::seconds(2)) == std::future_status::ready);
  CHECK(Name(first->future.get().outcome) == "no_capacity");
  CHECK(Name(second->future.get().outcome) == "no_capacity");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  SessionResult late = ClaimAsync(pool, Waiting(20000, "t3"))->future.get();
  CHECK(Name(late.outcome) == "no_capacity");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  CHECK(pool.alloc().stats().waiting.load() == 0);
}

TEST_CASE("wait: past max_waiters_per_pool a waiting claim is overloaded, other pools still wait") {
  allocator::AllocatorOptions options;
  options.max_waiters_per_pool = 2;
  Pool pool(EDGEALLOC_ENGINES, options);
  pool.alloc().Start();
  HoldOne(pool, "held");
  HoldOne(pool, "held-firefox", "weur", "firefox");
  auto a = ClaimAsync(pool, Waiting(20000));
  auto b = ClaimAsync(pool, Waiting(20000));
  REQUIRE(WaitersReach(pool.alloc(), 2));
  SessionResult refused = ClaimAsync(pool, Waiting(20000))->future.get();
  CHECK(Name(refused.outcome) == "overloaded");
  CHECK_THAT(refused.message, Catch::Contains("--max-claim-waiters"));
  auto other_pool = Req("weur", "t1", "firefox");
  other_pool.wait_ms = 20000;
  auto c = ClaimAsync(pool, other_pool);
  REQUIRE(WaitersReach(pool.alloc(), 3));
  CHECK(pool.alloc().stats().waits_refused.load() == 1);
  // Stopping answers every waiter.
  pool.alloc().Stop();
  CHECK(Name(a->future.get().outcome) == "no_capacity");
  CHECK(Name(b->future.get().outcome) == "no_capacity");
  CHECK(Name(c->future.get().outcome) == "no_capacity");
}

TEST_CASE("wait: a waiter whose client went away is answered and claims nothing") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.alloc().Start();
  SessionResult held = HoldOne(pool, "only");
  auto gone = std::make_shared<std::atomic<bool>>(false);
  auto waiter = ClaimAsync(pool, Waiting(20000), [gone] { return gone->load(); });
  REQUIRE(WaitersReach(pool.alloc(), 1));
  gone->store(true);
  SessionResult r = waiter->future.get();
  CHECK(Name(r.outcome) == "no_capacity");
  CHECK(pool.alloc().stats().waits_abandoned.load() == 1);
  REQUIRE(ReleaseHeld(pool, held) == "ok");
  // Nobody took the container for the client that left.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(pool.Get("only").status == "available");
}

TEST_CASE("wait: a session claimed for a client that left meanwhile is released at once") {
  Pool pool(EDGEALLOC_ENGINES, RetryEvery(60000));  // only the release wakes the waiter
  pool.alloc().Start();
  SessionResult held = HoldOne(pool, "only");
  // The client goes away just as its claim is made: "gone" from the moment
  // the container's token moved past the held session's (its claim
  // committed), asked when that claim comes back with the session.
  const int64_t held_token = held.session.token;
  auto waiter = ClaimAsync(pool, Waiting(20000), [&pool, held_token] {
    return pool.Get("only").generation > held_token;
  });
  REQUIRE(Eventually([&] { return pool.alloc().stats().waiting.load() == 1 || waiter->Ready(); }));
  REQUIRE(ReleaseHeld(pool, held) == "ok");
  SessionResult r = waiter->future.get();
  CHECK(Name(r.outcome) == "no_capacity");
  CHECK(pool.alloc().stats().waits_abandoned.load() == 1);
  // Claimed for it (a new token), then handed back.
  CHECK(Eventually([&] {
    auto c = pool.Get("only");
    return c.status == "available" && c.generation > held.session.token;
  }));
}

namespace {

// A storage that forwards to a real one, for the Allocator under test: it
// notes the sessions claims come back with, can fail Releases with kError,
// and can hold a claim's answer until the test hands it on.
class Probe : public testing::ForwardingStorage {
 public:
  explicit Probe(store::Storage* real) : ForwardingStorage(real) {}

  std::atomic<int> fail_releases{0};  // so many next Releases fail (kError), at once
  std::atomic<int> releases{0};       // Releases asked
  std::atomic<int> claims{0};         // Claims asked (each one goes through the write path)
  std::atomic<bool> hold_claims{false};
  std::atomic<bool> fail_probes{false};  // ProbePools fails (the store unreadable)

  // Whether a claim came back with a new session (kOk), and the last one.
  bool claimed() const { return claimed_.load(); }
  void ResetClaimed() { claimed_.store(false); }
  store::Session last_claimed() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  bool holding() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_ != nullptr;
  }
  // Hands the held claim's answer on, on this thread.
  void Deliver() {
    std::function<void()> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held = std::move(held_);
      held_ = nullptr;
    }
    if (held) held();
  }

  store::Status ProbePools(std::vector<store::PoolProbe>* pools) override {
    if (fail_probes.load()) return store::Status::IOError("disk I/O error (the probe)");
    return real()->ProbePools(pools);
  }
  void Claim(store::ClaimRequest req, store::SessionCallback done) override {
    ++claims;
    real()->Claim(std::move(req), [this, done = std::move(done)](SessionResult r) {
      if (r.outcome == Outcome::kOk) {
        std::lock_guard<std::mutex> lock(mu_);
        last_ = r.session;
        claimed_.store(true);
        if (hold_claims.load()) {
          held_ = [done, r] { done(r); };
          return;
        }
      }
      done(std::move(r));
    });
  }
  void Release(const store::Caller& caller, std::string session_id, int64_t token,
               store::SessionCallback done) override {
    ++releases;
    if (fail_releases.load() > 0) {
      --fail_releases;
      SessionResult r;
      r.outcome = Outcome::kError;
      r.message = "disk I/O error (the probe)";
      return done(std::move(r));
    }
    real()->Release(caller, std::move(session_id), token, std::move(done));
  }

 private:
  std::atomic<bool> claimed_{false};
  std::mutex mu_;
  store::Session last_;
  std::function<void()> held_;
};

// A waiting claim whose client leaves as soon as the storage gave it a
// session.
std::shared_ptr<Pending> ClaimLeaving(allocator::Allocator& alloc, Probe& probe,
                                      store::ClaimRequest req) {
  return ClaimAsync(alloc, std::move(req), [&probe] { return probe.claimed(); });
}

// A session's id, or its outcome's name when it is not live now.
std::string LiveSession(allocator::Allocator& alloc, const std::string& tenant,
                        const std::string& id) {
  SessionResult r = alloc.GetSession(Tenant(tenant), id);
  return r.outcome == Outcome::kOk ? r.session.session_id : Name(r.outcome);
}

// Tenant t0 holds the pool's container `id`, and an Allocator under test,
// started, claims through a Probe of the pool's storage, its waiters retrying
// every retry_ms (so they find a release made through the pool's own
// allocator). Members die in the order they must: the Allocator first.
struct ProbedAllocator {
  ProbedAllocator(Pool& pool, const std::string& id, int retry_ms)
      : held(HoldOne(pool, id)), probe(&pool.seam()), alloc(&probe, RetryEvery(retry_ms)) {
    alloc.Start();
    probe.ResetClaimed();
  }
  SessionResult held;
  Probe probe;
  allocator::Allocator alloc;
};

}  // namespace

// Issue: a waiting claim with an idempotency key whose client left after the
// storage gave it a session. A retry of the key (through another connection
// or node, perhaps already answered) replays that session: it must live on.
TEST_CASE("wait: a session claimed for a keyed waiter that left is kept for the key's retry") {
  Pool pool(EDGEALLOC_ENGINES);
  ProbedAllocator probed(pool, "only", 20);
  auto req = Waiting(20000);
  req.idempotency_key = "k-wait";
  // Gone as soon as the storage gave it a session.
  auto waiter = ClaimLeaving(probed.alloc, probed.probe, req);
  REQUIRE(WaitersReach(probed.alloc, 1));
  REQUIRE(ReleaseHeld(pool, probed.held) == "ok");
  SessionResult r = waiter->future.get();
  CHECK(Name(r.outcome) == "no_capacity");
  CHECK(probed.alloc.stats().waits_abandoned.load() == 1);
  CHECK(probed.alloc.stats().abandoned_sessions_kept.load() == 1);
  const store::Session kept = probed.probe.last_claimed();
  REQUIRE_FALSE(kept.session_id.empty());
  // Long enough for the waiters' thread to have released it, were it to.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(LiveSession(probed.alloc, "t1", kept.session_id) == kept.session_id);
  CHECK(pool.Get("only").status == "picked");
  auto retry = req;
  retry.wait_ms = 0;
  SessionResult replay =
      testing::Await<SessionResult>([&](auto cb) { probed.alloc.Claim(retry, cb); });
  CHECK(Name(replay.outcome) == "replayed");
  CHECK(replay.session.session_id == kept.session_id);
  CHECK(replay.session.token == kept.token);
}

// Issue: the first attempt of a waiting claim (before it queues) that gets a
// session after its client went away was handed to the gone client and never
// released. Without a key it is released; with one it is kept for the key.
TEST_CASE("wait: a first attempt whose client left meanwhile releases its session or keeps it for a key") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("only", "weur", "chrome")});
  Probe probe(&pool.seam());
  allocator::Allocator alloc(&probe, {});
  alloc.Start();

  // No key: nobody can ever read it, so it is handed back.
  SessionResult gone = ClaimLeaving(alloc, probe, Waiting(20000))
                           ->future.get();
  CHECK(Name(gone.outcome) == "no_capacity");
  CHECK(gone.session.session_id.empty());
  CHECK(alloc.stats().waits_abandoned.load() == 1);
  const store::Session released = probe.last_claimed();
  REQUIRE_FALSE(released.session_id.empty());
  CHECK(Eventually([&] {
    auto c = pool.Get("only");
    return c.status == "available" && c.generation == released.token;
  }));
  CHECK(LiveSession(alloc, "t1", released.session_id) == "session_ended");
  CHECK(alloc.GetSession(Tenant("t1"), released.session_id).end.reason == "abandoned");
  // Counted once the release's answer is back, just after the row shows it.
  CHECK(Eventually([&] { return alloc.stats().sessions_abandoned.load() == 1; }));

  // A key: a retry of it replays the session, so it lives on.
  probe.ResetClaimed();
  auto keyed = Waiting(20000);
  keyed.idempotency_key = "k-first";
  SessionResult gone_keyed =
      ClaimLeaving(alloc, probe, keyed)->future.get();
  CHECK(Name(gone_keyed.outcome) == "no_capacity");
  CHECK(alloc.stats().waits_abandoned.load() == 2);
  CHECK(alloc.stats().abandoned_sessions_kept.load() == 1);
  const store::Session kept = probe.last_claimed();
  REQUIRE(kept.session_id != released.session_id);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(LiveSession(alloc, "t1", kept.session_id) == kept.session_id);
  CHECK(pool.Get("only").status == "picked");
  keyed.wait_ms = 0;
  SessionResult replay = testing::Await<SessionResult>([&](auto cb) { alloc.Claim(keyed, cb); });
  CHECK(Name(replay.outcome) == "replayed");
  CHECK(replay.session.session_id == kept.session_id);
}

// Issue: the release of an abandoned session that failed (the store down or
// busy) was dropped, leaving the container held until the lease ended.
TEST_CASE("wait: an abandoned session whose release fails is released on a later try") {
  Pool pool(EDGEALLOC_ENGINES);
  ProbedAllocator probed(pool, "only", 20);
  probed.probe.fail_releases = 1;
  auto waiter = ClaimLeaving(probed.alloc, probed.probe, Waiting(20000));
  REQUIRE(WaitersReach(probed.alloc, 1));
  REQUIRE(ReleaseHeld(pool, probed.held) == "ok");
  CHECK(Name(waiter->future.get().outcome) == "no_capacity");
  const store::Session abandoned = probed.probe.last_claimed();
  REQUIRE(abandoned.token > probed.held.session.token);
  CHECK(Eventually([&] {
    auto c = pool.Get("only");
    return c.status == "available" && c.generation == abandoned.token;
  }));
  CHECK(probed.probe.releases.load() == 2);  // the one that failed, then the one that did it
  CHECK(probed.alloc.stats().abandoned_releases_failed.load() == 0);
}

// Issue: a session abandoned as the Allocator stops (its claim in flight
// then) was never released: nothing was left to release it.
TEST_CASE("stop: a session claimed for a client that left is released before Stop returns") {
  Pool pool(EDGEALLOC_ENGINES);
  ProbedAllocator probed(pool, "only", 20);
  auto waiter = ClaimLeaving(probed.alloc, probed.probe, Waiting(20000));
  REQUIRE(WaitersReach(probed.alloc, 1));
  // The waiter's claim gets the container; its answer is held back.
  probed.probe.hold_claims = true;
  probed.probe.fail_releases = 1;  // and the first release of it fails
  REQUIRE(ReleaseHeld(pool, probed.held) == "ok");
  REQUIRE(Eventually([&] { return probed.probe.holding(); }));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    probed.alloc.Stop();
    stopped = true;
  });
  // Stopping now; the answer comes back to a stopping Allocator, which
  // waits for it (the storage's writers still run).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(stopped.load());
  probed.probe.Deliver();
  stopper.join();
  // Its claim was with the store at the stop: the outcome was unknown then.
  CHECK(Name(waiter->future.get().outcome) == "error");
  const store::Session abandoned = probed.probe.last_claimed();
  auto c = pool.Get("only");
  CHECK(c.status == "available");
  CHECK(c.generation == abandoned.token);
  CHECK(probed.probe.releases.load() == 2);
  CHECK(probed.alloc.stats().abandoned_releases_failed.load() == 0);
}

TEST_CASE(
    "wait: an abandoned session whose release keeps failing is given up when its lease ends") {
  Pool pool(EDGEALLOC_ENGINES);
  pool.Add({Spec("only", "weur", "chrome")});
  Probe probe(&pool.seam());
  allocator::Allocator alloc(&probe, {});
  alloc.Start();
  probe.fail_releases = 1000000;  // the store stays down
  auto req = Waiting(20000);
  req.lease_ms = 400;
  SessionResult gone =
      ClaimLeaving(alloc, probe, req)->future.get();
  CHECK(Name(gone.outcome) == "no_capacity");
  const store::Session abandoned = probe.last_claimed();
  REQUIRE_FALSE(abandoned.session_id.empty());
  CHECK(Eventually([&] { return alloc.stats().abandoned_releases_failed.load() == 1; }));
  CHECK(base::NowMs() >= abandoned.lease_expires_at_ms);
  const int tries = probe.releases.load();
  CHECK(tries >= 2);  // tried again, backing off (100 ms, 200 ms, ...)
  CHECK(tries <= 6);
  // It ends by expiry: the reaper frees the container.
  CHECK(Eventually([&] { return pool.Get("only").status == "available"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(probe.releases.load() == tries);  // and nothing tries any more
}

namespace {

store::ClaimRequest WaitingFor(const std::string& tenant, const std::string& region,
                               const std::vector<std::string>& fallbacks = {}) {
  auto req = Req(region, tenant, "chrome");
  req.wait_ms = 20000;
  req.fallback_regions = fallbacks;
  return req;
}

}  // namespace

// Issue: a waiting claim on a made-up region (and made-up fallbacks) waited
// its whole wait_ms, its pool's head claiming through the write path every
// retry tick: 1,000 of them slowed every other tenant's claims 200-fold.
TEST_CASE("wait: a claim for a pool nobody registered answers at once and never waits") {
  Pool pool(EDGEALLOC_ENGINES);
  ProbedAllocator probed(pool, "held", 20);
  auto made_up = ClaimAsync(probed.alloc, WaitingFor("t1", "nowhere", {"nowhere-2", "nowhere-3"}));
  REQUIRE(made_up->future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  SessionResult r = made_up->future.get();
  CHECK(Name(r.outcome) == "unknown_pool");
  CHECK_THAT(r.message, Catch::Contains("is registered"));
  CHECK(probed.probe.claims.load() == 1);  // its first attempt only
  CHECK(probed.alloc.stats().waits_unregistered.load() == 1);
  CHECK(probed.alloc.stats().waiting.load() == 0);
  // A made-up region whose fallback has the pool waits: that one may free up.
  auto fallback = ClaimAsync(probed.alloc, WaitingFor("t1", "nowhere", {"weur"}));
  REQUIRE(WaitersReach(probed.alloc, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(fallback->Ready());
  probed.alloc.Stop();
  CHECK(Name(fallback->future.get().outcome) == "no_capacity");
}

// Issue: the first waiter of every pool claimed through the write path every
// retry tick, whether or not anything had changed.
TEST_CASE("wait: a waiter claims only when a probe finds a container it could take") {
  Pool pool(EDGEALLOC_ENGINES);
  ProbedAllocator probed(pool, "held", 10);
  auto waiter = ClaimAsync(probed.alloc, WaitingFor("t1", "weur"));
  REQUIRE(WaitersReach(probed.alloc, 1));
  const uint64_t probes_before = probed.alloc.stats().wait_probes.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(probed.probe.claims.load() == 1);  // the first attempt; no retry while the pool is full
  CHECK(probed.alloc.stats().wait_probes.load() > probes_before + 5);  // it kept looking, by reads
  // Freed behind its back (no release through this Allocator): the probe
  // finds it and the waiter claims once.
  REQUIRE(ReleaseHeld(pool, probed.held) == "ok");
  SessionResult got = waiter->future.get();
  REQUIRE(got.outcome == Outcome::kOk);
  CHECK(probed.probe.claims.load() == 2);
}

TEST_CASE("wait: when probing fails the first waiter still claims, as before probes") {
  Pool pool(EDGEALLOC_ENGINES);
  SessionResult held = HoldOne(pool, "held");
  Probe probe(&pool.seam());
  probe.fail_probes = true;
  allocator::Allocator alloc(&probe, RetryEvery(10));
  alloc.Start();
  auto made_up = ClaimAsync(alloc, WaitingFor("t1", "nowhere"));
  auto waiter = ClaimAsync(alloc, WaitingFor("t1", "weur"));
  REQUIRE(WaitersReach(alloc, 2));
  CHECK_FALSE(made_up->Ready());  // not known to be unregistered: it waits
  REQUIRE(ReleaseHeld(pool, held) == "ok");
  SessionResult got = waiter->future.get();
  REQUIRE(got.outcome == Outcome::kOk);
  CHECK(alloc.stats().wait_probes_failed.load() > 0);
  alloc.Stop();
  // Answered at the stop: none, or unknown if its claim (every pool's next
  // in line claims while probes fail) was with the store just then.
  const std::string stopped = Name(made_up->future.get().outcome);
  CHECK((stopped == "no_capacity" || stopped == "error"));
}

// Issue: the only bound was per pool, so one tenant could fill every pool's
// queue (and make up pools to have more queues).
TEST_CASE("wait: waiting claims are bounded per tenant and in all, fallbacks counted") {
  Pool pool(EDGEALLOC_ENGINES);
  HoldOne(pool, "held-w");
  HoldOne(pool, "held-e", "eeur");
  allocator::AllocatorOptions options;
  options.max_waiters_per_tenant = 3;
  options.max_waiters_total = 5;
  allocator::Allocator alloc(&pool.seam(), options);
  alloc.Start();
  // Two regions named: it counts 2 of t1's 3.
  auto a = ClaimAsync(alloc, WaitingFor("t1", "weur", {"eeur"}));
  REQUIRE(Eventually([&] { return alloc.WaitingOf("t1") == 2; }));
  SessionResult over = ClaimAsync(alloc, WaitingFor("t1", "eeur", {"weur"}))->future.get();
  CHECK(Name(over.outcome) == "overloaded");
  CHECK_THAT(over.message, Catch::Contains("--max-claim-waiters-per-tenant"));
  auto b = ClaimAsync(alloc, WaitingFor("t1", "eeur"));
  REQUIRE(Eventually([&] { return alloc.WaitingOf("t1") == 3; }));
  // Another tenant still waits, up to the total.
  auto c = ClaimAsync(alloc, WaitingFor("t2", "weur", {"eeur"}));
  REQUIRE(Eventually([&] { return alloc.WaitingOf("t2") == 2; }));
  SessionResult full = ClaimAsync(alloc, WaitingFor("t3", "weur"))->future.get();
  CHECK(Name(full.outcome) == "overloaded");
  CHECK_THAT(full.message, Catch::Contains("--max-claim-waiters-total"));
  // A tenant's own max_waiters (the keys file) wins over the default.
  auto own = WaitingFor("t4", "weur");
  own.caller.limits.max_waiters = 0;
  SessionResult none = ClaimAsync(alloc, own)->future.get();
  CHECK(Name(none.outcome) == "overloaded");
  CHECK_THAT(none.message, Catch::Contains("max_waiters in the keys file"));
  CHECK(alloc.stats().waits_refused.load() == 3);
  alloc.Stop();
  for (auto* w : {&a, &b, &c}) CHECK(Name((*w)->future.get().outcome) == "no_capacity");
  CHECK(alloc.WaitingOf("t1") == 0);
  CHECK(alloc.WaitingOf("t2") == 0);
}

// Issue: about 4,200 refused claims naming made-up pools filled every slot
// of the per-pool counts; real pools were then never counted. Since, such a
// claim is answered unknown_pool, counted apart, never per pool.
// Issue: a claim for a mistyped region or pool was 503 no_capacity with
// Retry-After, which a client retries forever; now 404 unknown_pool naming
// the pools of its region (the directory's).
TEST_CASE("claims: a pool nobody registered is unknown_pool, named apart from the counts") {
  constexpr int kMadeUp = 50;
  Pool pool(EDGEALLOC_ENGINES);
  HoldOne(pool, "held");
  allocator::Allocator alloc(&pool.seam(), {});
  allocator::PoolDirectory directory;
  directory.exists = [](const std::string& region, const std::string& name) {
    return region == "weur" && name == "chrome";
  };
  directory.pools_of = [](const std::string& region) {
    return region == "weur" ? std::vector<std::string>{"chrome"} : std::vector<std::string>{};
  };
  alloc.SetPoolDirectory(std::move(directory));
  alloc.Start();
  auto claim = [&](const std::string& region, const std::string& name) {
    std::promise<SessionResult> p;
    alloc.Claim(Req(region, "t1", name), [&p](SessionResult r) { p.set_value(r); });
    return p.get_future().get();
  };
  for (int i = 0; i < kMadeUp; ++i) {
    REQUIRE(Name(claim("made-up-" + std::to_string(i), "chrome").outcome) == "unknown_pool");
  }
  SessionResult typo = claim("weur", "chrmoe");
  CHECK(Name(typo.outcome) == "unknown_pool");
  CHECK_THAT(typo.message, Catch::Contains("region weur has pools chrome"));
  // A known pool with nothing free is no_capacity, at once.
  CHECK(Name(claim("weur", "chrome").outcome) == "no_capacity");
  const auto counts = alloc.PoolClaims();
  CHECK(counts.size() == 1);
  REQUIRE(counts.contains({"weur", "chrome"}));
  CHECK(counts.at({"weur", "chrome"}).no_capacity == 1);
  CHECK(alloc.stats().claims_unknown_pool.load() == kMadeUp + 1);
  CHECK(alloc.stats().claims_no_capacity.load() == 1);
}

// The directory is the mirror's view, a refresh late: a pool registered
// since is not in it yet, and a claim that found it full is still answered
// no_capacity once the store says it is registered.
TEST_CASE("claims: a full pool the directory does not know yet is no_capacity, not unknown") {
  Pool pool(EDGEALLOC_ENGINES);
  HoldOne(pool, "held");
  allocator::Allocator alloc(&pool.seam(), {});
  allocator::PoolDirectory directory;
  directory.exists = [](const std::string&, const std::string&) { return false; };
  alloc.SetPoolDirectory(std::move(directory));
  alloc.Start();
  std::promise<SessionResult> p;
  alloc.Claim(Req("weur", "t1", "chrome"), [&p](SessionResult r) { p.set_value(r); });
  SessionResult r = p.get_future().get();
  INFO(r.message);
  CHECK(Name(r.outcome) == "no_capacity");
  CHECK(alloc.stats().claims_unknown_pool.load() == 0);
}
