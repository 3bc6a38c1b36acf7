// The storage seam's contract (store/storage.h), run against every engine:
// each TEST_CASE runs once with SQLite and once with PostgreSQL (a real
// server the test starts, tests/support/pg_server.h). What one engine must
// do, the other must too.
#include "store/storage.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "tests/store/report_now.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using testing::Engine;
using testing::ReportNow;

using testing::Await;
using testing::Tenant;

store::SessionResult Claim(store::Storage* s, const std::string& region,
                           const std::string& tenant = "t1", const std::string& key = "",
                           int64_t lease_ms = 60000) {
  store::ClaimRequest req = testing::Req(region, tenant, "p");
  req.lease_ms = lease_ms;
  req.idempotency_key = key;
  return Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
}

void Register(store::Storage* s, const std::vector<std::string>& ids,
              const std::string& region = "weur") {
  std::vector<store::ContainerSpec> specs;
  for (const auto& id : ids) specs.push_back({id, region, "p", 0, "{}", 1, {}});
  auto r = Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
}

std::string Name(Outcome o) { return store::OutcomeName(o); }

// One page of a listing: `list(after, &items, &next)`.
template <typename Item>
using ListFn = std::function<store::Status(const std::string& after, std::vector<Item>* items,
                                           std::string* next)>;

// Pages through a listing whose filter matches none of more rows than a
// page examines: the first page stops at the bound, empty but with a cursor
// (not at the end), every later page is empty too, and the cursors end
// within `most` pages. Returns how many pages it took.
template <typename Item>
int PagesOfNothing(const ListFn<Item>& list, int most) {
  std::vector<Item> items;
  std::string next;
  REQUIRE(list("", &items, &next).ok());
  CHECK(items.empty());
  CHECK_FALSE(next.empty());
  int pages = 1;
  while (!next.empty()) {
    const std::string after = next;
    REQUIRE(list(after, &items, &next).ok());
    CHECK(items.empty());
    REQUIRE(++pages <= most);
  }
  return pages;
}

}  // namespace

// Registers a and b in weur and claims one of them: the claim, the id it
// holds and the other one.
struct OneOfTwo {
  store::SessionResult claim;
  std::string held;
  std::string free;
};

OneOfTwo ClaimOneOfTwo(store::Storage* s, const std::string& a, const std::string& b) {
  Register(s, {a, b});
  OneOfTwo r;
  r.claim = Claim(s, "weur");
  REQUIRE(r.claim.outcome == Outcome::kOk);
  r.held = r.claim.session.container_id;
  r.free = r.held == a ? b : a;
  return r;
}

TEST_CASE("storage: claim, read, renew and release are compare-and-swaps on the token") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"c1"});
  auto c = Claim(e.storage.get(), "weur");
  INFO(c.message);
  REQUIRE(c.outcome == Outcome::kOk);
  CHECK(c.session.container_id == "c1");
  CHECK(e->GetSession(Tenant("t1"), c.session.session_id).outcome == Outcome::kOk);
  CHECK(Name(e->GetSession(Tenant("t2"), c.session.session_id).outcome) == "forbidden");
  CHECK(Name(Claim(e.storage.get(), "weur").outcome) == "no_capacity");

  auto renewed = Await<store::SessionResult>([&](auto cb) {
    e->Renew(Tenant("t1"), c.session.session_id, c.session.token, 120000, cb);
  });
  CHECK(renewed.outcome == Outcome::kOk);
  CHECK(renewed.session.token == c.session.token);
  auto stale = Await<store::SessionResult>([&](auto cb) {
    e->Release(Tenant("t1"), c.session.session_id, c.session.token + 1, cb);
  });
  CHECK(Name(stale.outcome) == "stale_token");
  auto released = Await<store::SessionResult>([&](auto cb) {
    e->Release(Tenant("t1"), c.session.session_id, c.session.token, cb);
  });
  CHECK(released.outcome == Outcome::kOk);
  CHECK(Name(e->GetSession(Tenant("t1"), c.session.session_id).outcome) == "session_ended");
  CHECK(e->GetContainer("c1").container.status == "available");
  auto again = Claim(e.storage.get(), "weur");
  REQUIRE(again.outcome == Outcome::kOk);
  CHECK(again.session.token > c.session.token);
}

TEST_CASE("storage: an idempotent retry is the same session, a quota holds, fallbacks are tried") {
  const std::string engine = EDGEALLOC_ENGINES;
  store::ClaimPolicy policy;
  policy.max_sessions_per_tenant = 1;
  Engine e(engine, policy);
  Register(e.storage.get(), {"w1", "w2"});
  Register(e.storage.get(), {"n1"}, "wnam");
  auto first = Claim(e.storage.get(), "weur", "alice", "k-1");
  REQUIRE(first.outcome == Outcome::kOk);
  auto retry = Claim(e.storage.get(), "weur", "alice", "k-1");
  CHECK(Name(retry.outcome) == "replayed");
  CHECK(retry.session.session_id == first.session.session_id);
  CHECK(Name(Claim(e.storage.get(), "weur", "alice").outcome) == "quota_exceeded");
  CHECK(Name(Claim(e.storage.get(), "weur", "bob").outcome) == "ok");

  store::ClaimRequest req;
  req.caller.tenant = "carol";
  req.region = "weur";  // full now
  req.pool = "p";
  req.fallback_regions = {"wnam"};
  req.lease_ms = 60000;
  auto fell_back = Await<store::SessionResult>([&](auto cb) { e->Claim(req, cb); });
  CHECK(fell_back.outcome == Outcome::kOk);
  CHECK(fell_back.session.container_id == "n1");
}

// A tenant line of the keys file may carry max_sessions=N: the caller's own
// limit wins over the server's --max-sessions-per-tenant, lower or higher.
TEST_CASE("storage: a tenant's own max_sessions overrides the server's quota, either way") {
  const std::string engine = EDGEALLOC_ENGINES_AND_SHARDS;
  store::ClaimPolicy policy;
  policy.max_sessions_per_tenant = 2;
  Engine e(engine, policy);
  Register(e.storage.get(), {"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10"});
  Register(e.storage.get(), {"n1", "n2", "n3", "n4"}, "wnam");
  auto claim = [&](const std::string& tenant, int64_t own, const std::string& region) {
    store::ClaimRequest req;
    req.caller.tenant = tenant;
    req.caller.limits.max_sessions = own;
    req.region = region;
    req.pool = "p";
    req.lease_ms = 60000;
    return Await<store::SessionResult>([&](auto cb) { e->Claim(std::move(req), cb); });
  };
  // Lower than the server's: one, whichever region (shard) the next asks.
  CHECK(Name(claim("small", 1, "weur").outcome) == "ok");
  CHECK(Name(claim("small", 1, "wnam").outcome) == "quota_exceeded");
  CHECK(Name(claim("small", 1, "weur").outcome) == "quota_exceeded");
  // Higher than the server's: four, across regions.
  CHECK(Name(claim("big", 4, "weur").outcome) == "ok");
  CHECK(Name(claim("big", 4, "wnam").outcome) == "ok");
  CHECK(Name(claim("big", 4, "weur").outcome) == "ok");
  CHECK(Name(claim("big", 4, "wnam").outcome) == "ok");
  CHECK(Name(claim("big", 4, "weur").outcome) == "quota_exceeded");
  // Unlimited for one tenant although the server has a quota.
  CHECK(Name(claim("free", store::kUnlimited, "weur").outcome) == "ok");
  CHECK(Name(claim("free", store::kUnlimited, "wnam").outcome) == "ok");
  CHECK(Name(claim("free", store::kUnlimited, "weur").outcome) == "ok");
  // Unset: the server's quota of 2.
  CHECK(Name(claim("plain", store::TenantLimits::kUnset, "weur").outcome) == "ok");
  CHECK(Name(claim("plain", store::TenantLimits::kUnset, "wnam").outcome) == "ok");
  CHECK(Name(claim("plain", store::TenantLimits::kUnset, "weur").outcome) == "quota_exceeded");
}

TEST_CASE("storage: drain, remove, and tokens that only grow across delete and register") {
  Engine e(EDGEALLOC_ENGINES);
  // Named, not bound: clang 14 lets no lambda capture a structured binding.
  const OneOfTwo one = ClaimOneOfTwo(e.storage.get(), "c1", "c2");
  const store::SessionResult& c = one.claim;
  const std::string &held = one.held, &free = one.free;
  auto conflict = Await<store::ContainerResult>([&](auto cb) { e->Remove(held, cb); });
  CHECK(Name(conflict.outcome) == "conflict");
  auto drained = Await<store::ContainerResult>([&](auto cb) { e->Drain(free, cb); });
  CHECK(drained.outcome == Outcome::kOk);
  CHECK(e->GetContainer(free).container.status == "draining");
  auto removed = Await<store::ContainerResult>([&](auto cb) { e->Remove(free, cb); });
  CHECK(removed.outcome == Outcome::kOk);
  CHECK(Name(e->GetContainer(free).outcome) == "not_found");

  REQUIRE(Await<store::SessionResult>([&](auto cb) {
            e->Release(Tenant("t1"), c.session.session_id, c.session.token, cb);
          }).outcome == Outcome::kOk);
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { e->Remove(held, cb); }).outcome ==
          Outcome::kOk);
  Register(e.storage.get(), {held});
  auto back = Claim(e.storage.get(), "weur");
  REQUIRE(back.outcome == Outcome::kOk);
  CHECK(back.session.container_id == held);
  CHECK(back.session.token > c.session.token);
}

namespace {

store::ContainerResult Drain(store::Storage* s, const std::string& id) {
  return Await<store::ContainerResult>([&](auto cb) { s->Drain(id, cb); });
}
store::ContainerResult Undrain(store::Storage* s, const std::string& id) {
  return Await<store::ContainerResult>([&](auto cb) { s->Undrain(id, cb); });
}

// "status" with " drain_requested" and " drain_reported" when set.
std::string StateOf(store::Storage* s, const std::string& id) {
  const store::ContainerResult r = s->GetContainer(id);
  REQUIRE(r.outcome == Outcome::kOk);
  return r.container.status + (r.container.drain_requested ? " drain_requested" : "") +
         (r.container.drain_reported ? " drain_reported" : "");
}

// Every partition's dead-container sweep, with everything silent.
void SweepAllSilent(store::Storage* s) {
  const int64_t future = base::NowMs() + 60000;
  for (int p = 0; p < s->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(s->SweepSilentContainers(p, [future] { return future; }, store::HeldPools{}, 100, &sweep).ok());
  }
}

}  // namespace

TEST_CASE("storage: an operator's drain holds through ready reports, registration, death and revival") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"d1"});
  const store::ContainerResult drained = Drain(s, "d1");
  REQUIRE(drained.outcome == Outcome::kOk);
  CHECK(drained.container.id == "d1");  // the container as the drain left it
  CHECK(drained.container.status == "draining");
  CHECK(drained.container.drain_requested);
  ReportNow(s, "d1", store::ReportedState::kReady);
  CHECK(StateOf(s, "d1") == "draining drain_requested");
  Register(s, {"d1"});
  CHECK(StateOf(s, "d1") == "draining drain_requested");
  CHECK(Name(Claim(s, "weur").outcome) == "no_capacity");
  SweepAllSilent(s);
  CHECK(StateOf(s, "d1") == "dead drain_requested");
  ReportNow(s, "d1", store::ReportedState::kReady);  // back, and still drained
  CHECK(StateOf(s, "d1") == "draining drain_requested");
  SweepAllSilent(s);
  Register(s, {"d1"});  // a registration brings it back drained too
  CHECK(StateOf(s, "d1") == "draining drain_requested");

  const store::ContainerResult undrained = Undrain(s, "d1");
  REQUIRE(undrained.outcome == Outcome::kOk);
  CHECK(undrained.container.status == "available");
  CHECK_FALSE(undrained.container.drain_requested);
  CHECK(Claim(s, "weur").outcome == Outcome::kOk);
  CHECK(Name(Undrain(s, "nope").outcome) == "not_found");
  CHECK(Name(Drain(s, "nope").outcome) == "not_found");
}

TEST_CASE("storage: a container's own drain ends at its own ready, an undrain leaves it") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"c1"});
  ReportNow(s, "c1", store::ReportedState::kDraining);
  CHECK(StateOf(s, "c1") == "draining drain_reported");
  ReportNow(s, "c1", store::ReportedState::kDraining);  // again: nothing changes
  CHECK(StateOf(s, "c1") == "draining drain_reported");
  CHECK(Undrain(s, "c1").container.status == "draining");  // not the operator's to end
  ReportNow(s, "c1", store::ReportedState::kReady);
  CHECK(StateOf(s, "c1") == "available");

  // Both: its ready ends its own drain only; the undrain then frees it.
  ReportNow(s, "c1", store::ReportedState::kDraining);
  REQUIRE(Drain(s, "c1").outcome == Outcome::kOk);
  CHECK(StateOf(s, "c1") == "draining drain_requested drain_reported");
  ReportNow(s, "c1", store::ReportedState::kReady);
  CHECK(StateOf(s, "c1") == "draining drain_requested");
  CHECK(Undrain(s, "c1").container.status == "available");
  // And the other way round: undrain first, then its ready.
  ReportNow(s, "c1", store::ReportedState::kDraining);
  REQUIRE(Drain(s, "c1").outcome == Outcome::kOk);
  CHECK(Undrain(s, "c1").container.status == "draining");
  ReportNow(s, "c1", store::ReportedState::kReady);
  CHECK(StateOf(s, "c1") == "available");
}

TEST_CASE("storage: a picked container finishes its session, then drains, and a delete ends a drain") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  const OneOfTwo one = ClaimOneOfTwo(s, "p1", "p2");
  const store::SessionResult& c = one.claim;
  const std::string &held = one.held, &free = one.free;
  const store::ContainerResult drained = Drain(s, held);
  CHECK(drained.container.status == "picked");
  CHECK(drained.container.drain_requested);
  ReportNow(s, held, store::ReportedState::kReady);
  CHECK(StateOf(s, held) == "picked drain_requested");
  REQUIRE(Await<store::SessionResult>([&](auto cb) {
            s->Release(Tenant("t1"), c.session.session_id, c.session.token, cb);
          }).outcome == Outcome::kOk);
  CHECK(StateOf(s, held) == "draining drain_requested");
  ReportNow(s, held, store::ReportedState::kReady);
  CHECK(StateOf(s, held) == "draining drain_requested");

  // Its own draining report while picked: draining after the lease's end,
  // until its ready.
  auto next = Claim(s, "weur", "t1", "", /*lease_ms=*/1);
  REQUIRE(next.outcome == Outcome::kOk);
  CHECK(next.session.container_id == free);
  ReportNow(s, free, store::ReportedState::kDraining);
  CHECK(StateOf(s, free) == "picked drain_reported");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int64_t ended = 0;
  REQUIRE(s->SweepExpiredLeases(0, 100, &ended).ok());
  CHECK(ended == 1);
  CHECK(StateOf(s, free) == "draining drain_reported");
  ReportNow(s, free, store::ReportedState::kReady);
  CHECK(StateOf(s, free) == "available");

  // Delete ends the drain: registered again, it is available.
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { s->Remove(held, cb); }).outcome ==
          Outcome::kOk);
  Register(s, {held});
  CHECK(StateOf(s, held) == "available");
}

TEST_CASE("storage: the capacity readers count drained containers and read their ids") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  Register(s, {"w1", "w2", "w3"});
  Register(s, {"n1"}, "wnam");
  const auto held = Claim(s, "weur");
  REQUIRE(held.outcome == Outcome::kOk);
  const std::string picked = held.session.container_id;
  REQUIRE(Drain(s, picked).outcome == Outcome::kOk);  // held: drained, not yet draining
  REQUIRE(Drain(s, "n1").outcome == Outcome::kOk);
  const std::string self = picked == "w1" ? "w2" : "w1";
  ReportNow(s, self, store::ReportedState::kDraining);  // draining, not drained
  std::map<std::string, std::pair<int64_t, int64_t>> draining;  // region: count, drained
  std::set<std::string> ids;
  for (int p = 0; p < s->partitions(); ++p) {
    auto reader = s->NewCapacityReader(p, 250);
    store::CapacityRead read;
    bool unchanged = true;
    REQUIRE(reader->Read(&read, &unchanged).ok());
    for (const auto& count : read.counts) {
      if (count.status == "draining") {
        draining[count.region].first += count.count;
        draining[count.region].second += count.drained;
      } else {
        CHECK(count.drained == (count.status == "picked" ? 1 : 0));
      }
    }
    ids.insert(read.drained_ids.begin(), read.drained_ids.end());
  }
  CHECK(draining == std::map<std::string, std::pair<int64_t, int64_t>>{
                        {"weur", {1, 0}}, {"wnam", {1, 1}}});
  CHECK(ids == std::set<std::string>{picked, "n1"});
}

TEST_CASE("storage: heartbeats keep order, never touch a claim, and find unknown ids") {
  Engine e(EDGEALLOC_ENGINES);
  const auto [c, held, free] = ClaimOneOfTwo(e.storage.get(), "a", "b");
  const int64_t now = base::NowMs();
  std::vector<store::HeartbeatRow> rows = {
      {free, now, 10, 0.5, store::ReportedState::kDraining},
      {held, now, 10, std::nullopt, store::ReportedState::kDraining},
      {free, now, 5, std::nullopt, store::ReportedState::kReady},  // older: liveness only
      {"nope", now, std::nullopt, std::nullopt, store::ReportedState::kNone}};
  int partition = -1;
  REQUIRE(e->PartitionOf(free, &partition).ok());
  store::HeartbeatWriteResult result;
  REQUIRE(e->WriteHeartbeats(partition, rows, &result).ok());
  CHECK(result.written == 3);
  CHECK(result.stale == 1);
  CHECK(result.unknown == std::vector<size_t>{3});
  CHECK(e->GetContainer(free).container.status == "draining");
  auto h = e->GetContainer(held);
  CHECK(h.container.status == "picked");  // a heartbeat never frees a claim
  CHECK(h.container.drain_reported);       // its own drain, not an operator's
  CHECK_FALSE(h.container.drain_requested);
  CHECK(e->GetSession(Tenant("t1"), c.session.session_id).outcome == Outcome::kOk);
}

TEST_CASE("storage: sweeps end expired leases and silent containers, and capacity counts them") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"a", "b", "c"});
  auto c = Claim(e.storage.get(), "weur", "t1", "", /*lease_ms=*/1);
  REQUIRE(c.outcome == Outcome::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int64_t ended = 0;
  REQUIRE(e->SweepExpiredLeases(0, 100, &ended).ok());
  CHECK(ended == 1);
  CHECK(e->GetContainer(c.session.container_id).container.status == "available");

  auto held = Claim(e.storage.get(), "weur");
  REQUIRE(held.outcome == Outcome::kOk);
  // Everything is silent as of a cutoff in the future.
  // Every partition's sweep: each covers its own containers.
  store::SilenceSweep total;
  const int64_t future = base::NowMs() + 60000;
  for (int p = 0; p < e->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(e->SweepSilentContainers(p, [future] { return future; }, store::HeldPools{}, 100, &sweep).ok());
    total.sessions_ended += sweep.sessions_ended;
    total.marked_dead += sweep.marked_dead;
  }
  CHECK(total.sessions_ended == 1);
  CHECK(total.marked_dead == 2);
  CHECK(Name(e->GetSession(Tenant("t1"), held.session.session_id).outcome) == "session_ended");

  // The partitions' readers together count each container once.
  std::map<std::string, int64_t> by_status;
  for (int p = 0; p < e->partitions(); ++p) {
    auto reader = e->NewCapacityReader(p, 250);
    store::CapacityRead read;
    bool unchanged = true;
    REQUIRE(reader->Read(&read, &unchanged).ok());
    CHECK_FALSE(unchanged);
    for (const auto& count : read.counts) by_status[count.status] += count.count;
  }
  CHECK(by_status == std::map<std::string, int64_t>{{"dead", 3}});
}

// What the reaper logs and counts comes back from the sweep itself: every
// container it marked dead, held ones first, with its region and pool, how
// long it was silent and whether it had reported itself dead.
TEST_CASE("storage: a silence sweep returns whom it marked dead, where, and why") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"quiet-1"}, "weur");
  Register(e.storage.get(), {"quiet-2"}, "eeur");
  Register(e.storage.get(), {"held"}, "neur");
  // A free container that reports itself dead is dead at once, by its
  // heartbeat; a held one waits for the sweep, which ends its session.
  Register(e.storage.get(), {"said-dead"}, "seur");
  REQUIRE(Claim(e.storage.get(), "neur").outcome == Outcome::kOk);
  REQUIRE(Claim(e.storage.get(), "seur").outcome == Outcome::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  int partition = -1;
  REQUIRE(e->PartitionOf("said-dead", &partition).ok());
  store::HeartbeatWriteResult written;
  const int64_t stamped = base::NowMs();
  REQUIRE(e->WriteHeartbeats(partition,
                             {{"said-dead", stamped, std::nullopt, std::nullopt,
                               store::ReportedState::kDead}},
                             &written)
              .ok());
  // The three others are silent, said-dead is not, however long the write
  // took on a loaded machine (the cutoff is from its stamp, not from now).
  const int64_t cutoff = stamped - 200;
  std::map<std::string, store::DeadContainer> dead;
  int64_t sessions_ended = 0;
  for (int p = 0; p < e->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(e->SweepSilentContainers(p, [cutoff] { return cutoff; }, store::HeldPools{}, 100, &sweep).ok());
    CHECK(static_cast<int64_t>(sweep.dead.size()) == sweep.held_dead + sweep.marked_dead);
    for (int64_t i = 0; i < sweep.held_dead; ++i) {
      CHECK((sweep.dead[i].id == "held" || sweep.dead[i].id == "said-dead"));
    }
    sessions_ended += sweep.sessions_ended;
    for (const auto& d : sweep.dead) dead[d.id] = d;
  }
  CHECK(sessions_ended == 2);
  REQUIRE(dead.size() == 4);
  CHECK(dead["quiet-1"].region == "weur");
  CHECK(dead["quiet-2"].region == "eeur");
  CHECK(dead["held"].region == "neur");
  CHECK(dead["quiet-2"].pool == "p");
  for (const char* id : {"quiet-1", "quiet-2", "held"}) {
    INFO(id);
    CHECK_FALSE(dead[id].reported);
    CHECK(dead[id].silent_ms >= 300);
    CHECK(dead[id].silent_ms < 60000);
  }
  CHECK(dead["said-dead"].reported);
  // At most the time since its stamp (PostgreSQL maps the stamp onto its
  // own clock as the earliest it may have been: a few ms more at most).
  CHECK(dead["said-dead"].silent_ms <= base::NowMs() - stamped + 50);
  // Swept again: nothing more, nothing returned.
  for (int p = 0; p < e->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(e->SweepSilentContainers(p, [cutoff] { return cutoff; }, store::HeldPools{}, 100, &sweep).ok());
    CHECK(sweep.dead.empty());
  }
}

// A partition's dead-container sweep covers exactly the containers whose
// heartbeats it writes (PartitionOf): the batcher bounds each partition's
// cutoff by its own queue, so a sweep reaching into another partition could
// mark dead a container whose heartbeat waits in that partition's queue.
TEST_CASE("storage: a partition's sweep marks dead only the containers of its partition") {
  Engine e(EDGEALLOC_ENGINES);
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back("c" + std::to_string(i));
  Register(e.storage.get(), ids);
  std::map<int, std::vector<std::string>> by_partition;
  for (const std::string& id : ids) {
    int partition = -1;
    REQUIRE(e->PartitionOf(id, &partition).ok());
    REQUIRE(partition >= 0);
    REQUIRE(partition < e->partitions());
    by_partition[partition].push_back(id);
  }
  if (e.engine == "postgres") CHECK(by_partition.size() > 1);  // spread
  const int64_t future = base::NowMs() + 60000;
  for (const auto& [partition, members] : by_partition) {
    store::SilenceSweep sweep;
    REQUIRE(e->SweepSilentContainers(partition, [future] { return future; }, store::HeldPools{}, 100, &sweep).ok());
    CHECK(sweep.marked_dead == static_cast<int64_t>(members.size()));
    for (const std::string& id : ids) {
      int p = -1;
      REQUIRE(e->PartitionOf(id, &p).ok());
      const bool swept = p <= partition;  // partitions are swept in order
      CHECK((e->GetContainer(id).container.status == "dead") == swept);
    }
  }
}

// Two nodes on one database (PostgreSQL: two processes' worth of writers and
// connections; SQLite: two writers on one file, serialized by its write
// lock), eight clients claiming and releasing: never two holders of one
// container, never one of its tokens twice.
TEST_CASE("storage: two nodes on one database never hand out a container twice") {
  Engine e(EDGEALLOC_ENGINES);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back("c" + std::to_string(i));
  Register(e.storage.get(), ids);
  std::unique_ptr<store::Storage> second = e.Open();
  std::mutex mu;
  std::set<std::string> holding;  // containers held now
  std::set<std::pair<std::string, int64_t>> tokens;  // a token is per container
  int doubles = 0, repeats = 0, claims = 0, errors = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    store::Storage* node = t % 2 == 0 ? e.storage.get() : second.get();
    clients.emplace_back([&, node, t] {
      while (!stop.load()) {
        auto c = Claim(node, "weur", "tenant" + std::to_string(t));
        if (c.outcome == Outcome::kNoCapacity) continue;
        if (c.outcome != Outcome::kOk) {
          std::lock_guard<std::mutex> lock(mu);
          ++errors;
          continue;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          ++claims;
          if (!holding.insert(c.session.container_id).second) ++doubles;
          if (!tokens.insert({c.session.container_id, c.session.token}).second) ++repeats;
        }
        // Held a moment, so that a second holder would overlap with it; out
        // of the set before the release commits (a claim after it may take
        // the container at once).
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        {
          std::lock_guard<std::mutex> lock(mu);
          holding.erase(c.session.container_id);
        }
        auto r = Await<store::SessionResult>([&](auto cb) {
          node->Release(Tenant("tenant" + std::to_string(t)), c.session.session_id,
                        c.session.token, cb);
        });
        if (r.outcome != Outcome::kOk) {
          std::lock_guard<std::mutex> lock(mu);
          ++errors;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& c : clients) c.join();
  INFO("claims " << claims << " errors " << errors << " (" << e.db << ")");
  CHECK(claims > 50);
  CHECK(doubles == 0);
  CHECK(repeats == 0);
  CHECK(errors == 0);
}

TEST_CASE("storage: a batch of plain heartbeats orders each container's reports by ts_ms") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"a", "b", "c"});
  const int64_t now = base::NowMs();
  using R = store::HeartbeatRow;
  store::HeartbeatWriteResult first, second;
  REQUIRE(e->WriteHeartbeats(0, {R{"a", now, 10, 0.1, {}}, R{"b", now, 10, 0.1, {}}}, &first).ok());
  CHECK(first.written == 2);
  CHECK(first.stale == 0);
  // a's report is older than the stored one (liveness only); b's is newer;
  // c's has no ts_ms (current); x is nobody.
  REQUIRE(e->WriteHeartbeats(0,
                             {R{"a", now + 1, 5, 0.9, {}}, R{"b", now + 1, 20, 0.9, {}},
                              R{"c", now + 1, std::nullopt, 0.5, {}},
                              R{"x", now + 1, std::nullopt, std::nullopt, {}}},
                             &second)
              .ok());
  CHECK(second.written == 3);
  CHECK(second.stale == 1);
  CHECK(second.unknown == std::vector<size_t>{3});
  const int64_t stamp = e->GetContainer("a").container.last_heartbeat_ms;
  if (e.engine == "postgres") {
    // The accept time mapped onto the database's clock by the measured
    // offset (one machine here: close to ours).
    CHECK(stamp >= now - 1000);
    CHECK(stamp <= base::NowMs() + 1000);
  } else {
    CHECK(stamp == now + 1);  // the accept time the batcher stamped
  }
  CHECK(e->GetContainer("c").container.status == "available");
}

TEST_CASE("storage: a database is logged without its password, with its engine") {
  CHECK(store::DbForDisplay("pool.db") == "pool.db");
  CHECK(store::EngineName("pool.db") == std::string("sqlite"));
  CHECK(store::DbForDisplay("postgresql://ea:s3cret@db1:5432/fleet") ==
        "postgresql://ea:***@db1:5432/fleet");
  CHECK(store::DbForDisplay("postgresql://ea@db1/fleet?password=s3cret&sslmode=require") ==
        "postgresql://ea@db1/fleet?password=***&sslmode=require");
  CHECK(store::DbForDisplay("host=db1 password=s3cret dbname=fleet") ==
        "host=db1 password=*** dbname=fleet");
  CHECK(store::EngineName("postgres://db1/fleet") == std::string("postgresql"));
}

TEST_CASE("storage: CountTenantSessions counts what the quota counts, committed, every partition") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"a", "b", "c"});
  int64_t n = -1;
  REQUIRE(e->CountTenantSessions("t1", &n).ok());
  CHECK(n == 0);
  auto first = Claim(e.storage.get(), "weur", "t1");
  auto second = Claim(e.storage.get(), "weur", "t1");
  REQUIRE(Claim(e.storage.get(), "weur", "t2").outcome == Outcome::kOk);
  REQUIRE(first.outcome == Outcome::kOk);
  REQUIRE(second.outcome == Outcome::kOk);
  REQUIRE(e->CountTenantSessions("t1", &n).ok());
  CHECK(n == 2);
  REQUIRE(e->CountTenantSessions("nobody", &n).ok());
  CHECK(n == 0);
  std::promise<store::SessionResult> released;
  e->Release(Tenant("t1"), first.session.session_id, first.session.token,
             [&](store::SessionResult r) { released.set_value(std::move(r)); });
  REQUIRE(released.get_future().get().outcome == Outcome::kOk);
  REQUIRE(e->CountTenantSessions("t1", &n).ok());
  CHECK(n == 1);
}

namespace {

store::SessionResult ClaimLabelled(store::Storage* s, const std::string& region,
                                   const std::string& tenant, const std::string& labels) {
  store::ClaimRequest req;
  req.caller.tenant = tenant;
  req.region = region;
  req.pool = "p";
  req.lease_ms = 60000;
  req.labels = labels;
  return Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
}

// Every session of the filter, page by page (limit a page), following
// next_after as a client follows next_cursor: each page in key order, after
// the previous one's next_after, and each next_after past its page.
std::vector<store::Session> AllSessions(store::Storage* s, const store::SessionFilter& filter,
                                        int limit, int* pages) {
  std::vector<store::Session> all;
  std::string after;
  *pages = 0;
  for (;;) {
    std::vector<store::Session> page;
    std::string next;
    store::Status st = s->ListSessions(filter, after, limit, &page, &next);
    INFO(st.ToString());
    REQUIRE(st.ok());
    REQUIRE(page.size() <= static_cast<size_t>(limit));
    ++*pages;
    for (const auto& session : page) {
      CHECK(session.session_id > after);
      after = session.session_id;
      all.push_back(session);
    }
    if (next.empty()) return all;
    REQUIRE(next >= after);  // never back: the listing always ends
    REQUIRE((next > after || !page.empty()));
    after = next;
  }
}

}  // namespace

TEST_CASE("storage: labels and the tenant are stored with the session, returned by every read, "
          "gone when it ends") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"c1"});
  const std::string labels = R"({"owner":"ci-42","team":"edge"})";
  auto c = ClaimLabelled(e.storage.get(), "weur", "t1", labels);
  REQUIRE(c.outcome == Outcome::kOk);
  CHECK(c.session.labels == labels);
  CHECK(c.session.tenant == "t1");
  CHECK(e->GetSession(Tenant("t1"), c.session.session_id).session.labels == labels);
  CHECK(e->GetSession(Tenant("t1"), c.session.session_id).session.tenant == "t1");
  auto renewed = Await<store::SessionResult>([&](auto cb) {
    e->Renew(Tenant("t1"), c.session.session_id, c.session.token, 120000, cb);
  });
  CHECK(renewed.session.labels == labels);
  CHECK(renewed.session.tenant == "t1");
  std::vector<store::Session> page;
  std::string next_after;
  REQUIRE(e->ListSessions({}, "", 10, &page, &next_after).ok());
  CHECK(next_after.empty());
  REQUIRE(page.size() == 1);
  CHECK(page[0].labels == labels);
  CHECK(page[0].tenant == "t1");
  auto released = Await<store::SessionResult>([&](auto cb) {
    e->Release(Tenant("t1"), c.session.session_id, c.session.token, cb);
  });
  REQUIRE(released.outcome == Outcome::kOk);
  // The container's next session has none of them.
  auto next = Claim(e.storage.get(), "weur");
  REQUIRE(next.outcome == Outcome::kOk);
  CHECK(next.session.labels == "{}");
  CHECK(e->GetSession(Tenant("t1"), next.session.session_id).session.labels == "{}");
}

TEST_CASE("storage: an idempotent replay returns the first claim's labels") {
  Engine e(EDGEALLOC_ENGINES);
  Register(e.storage.get(), {"c1", "c2"});
  store::ClaimRequest req;
  req.caller.tenant = "t1";
  req.region = "weur";
  req.pool = "p";
  req.lease_ms = 60000;
  req.idempotency_key = "k";
  req.labels = R"({"run":"1"})";
  auto first = Await<store::SessionResult>([&](auto cb) { e->Claim(req, cb); });
  REQUIRE(first.outcome == Outcome::kOk);
  req.labels = R"({"run":"2"})";
  auto replay = Await<store::SessionResult>([&](auto cb) { e->Claim(req, cb); });
  REQUIRE(Name(replay.outcome) == "replayed");
  CHECK(replay.session.labels == R"({"run":"1"})");
  CHECK(replay.session.tenant == "t1");
  CHECK(replay.session.session_id == first.session.session_id);
}

TEST_CASE("storage: session lists page in id order, filter, and hold each lasting session once "
          "under concurrent claims and releases") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  const std::vector<std::string> regions = {"weur", "eeur", "wnam", "apac"};
  for (const auto& region : regions) {
    std::vector<std::string> ids;
    for (int i = 0; i < 20; ++i) ids.push_back(region + "-" + std::to_string(i));
    Register(e.storage.get(), ids, region);
  }
  // 40 sessions that last through the listing: 10 a region, tenants and
  // labels alternating.
  std::set<std::string> lasting, of_t1, labelled_a, in_weur;
  for (int i = 0; i < 40; ++i) {
    const std::string& region = regions[static_cast<size_t>(i % 4)];
    const std::string tenant = i % 2 == 0 ? "t1" : "t2";
    const std::string owner = i % 3 == 0 ? "a" : "b";
    auto c = ClaimLabelled(e.storage.get(), region, tenant, R"({"owner":")" + owner + R"("})");
    REQUIRE(c.outcome == Outcome::kOk);
    lasting.insert(c.session.session_id);
    if (tenant == "t1") of_t1.insert(c.session.session_id);
    if (owner == "a") labelled_a.insert(c.session.session_id);
    if (region == "weur") in_weur.insert(c.session.session_id);
  }

  // Meanwhile other sessions come and go on the 40 containers left.
  std::atomic<bool> stop{false};
  std::atomic<int> churned{0};
  std::thread churn([&] {
    int i = 0;
    while (!stop.load()) {
      auto c = Claim(e.storage.get(), regions[static_cast<size_t>(i++ % 4)], "t3");
      if (c.outcome != Outcome::kOk) continue;
      Await<store::SessionResult>([&](auto cb) {
        e->Release(Tenant("t3"), c.session.session_id, c.session.token, cb);
      });
      churned.fetch_add(1);
    }
  });
  int pages = 0;
  std::multiset<std::string> seen;
  for (int round = 0; round < 3; ++round) {
    for (const auto& s : AllSessions(e.storage.get(), {}, 7, &pages)) seen.insert(s.session_id);
  }
  stop = true;
  churn.join();
  INFO(churned.load() << " sessions came and went during the listing");
  for (const auto& id : lasting) {
    INFO(id);
    CHECK(seen.count(id) == 3);  // once in each of the three listings
  }
  CHECK(pages >= 6);  // 40 lasting sessions, 7 a page: several pages each time

  auto ids = [](const std::vector<store::Session>& v) {
    std::set<std::string> out;
    for (const auto& s : v) out.insert(s.session_id);
    return out;
  };
  store::SessionFilter by_tenant;
  by_tenant.tenant = "t1";
  CHECK(ids(AllSessions(e.storage.get(), by_tenant, 3, &pages)) == of_t1);
  store::SessionFilter by_label;
  by_label.label_key = "owner";
  by_label.label_value = "a";
  auto labelled = AllSessions(e.storage.get(), by_label, 100, &pages);
  CHECK(ids(labelled) == labelled_a);
  CHECK(pages == 1);
  for (const auto& s : labelled) CHECK(s.labels == R"({"owner":"a"})");
  store::SessionFilter by_region;
  by_region.region = "weur";
  by_region.pool = "p";
  CHECK(ids(AllSessions(e.storage.get(), by_region, 4, &pages)) == in_weur);
  store::SessionFilter no_such;
  no_such.label_key = "owner";
  no_such.label_value = "c";
  CHECK(AllSessions(e.storage.get(), no_such, 10, &pages).empty());
}

TEST_CASE("storage: container lists page in id order, filter, and list every container once") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  const std::vector<std::string> regions = {"weur", "eeur", "wnam"};
  std::set<std::string> registered;
  for (const auto& region : regions) {
    std::vector<std::string> ids;
    for (int i = 0; i < 15; ++i) ids.push_back(region + "-" + std::to_string(i));
    Register(e.storage.get(), ids, region);
    registered.insert(ids.begin(), ids.end());
  }
  for (int i = 0; i < 5; ++i) REQUIRE(Claim(e.storage.get(), "eeur").outcome == Outcome::kOk);

  auto list = [&](const store::ContainerFilter& filter, int limit) {
    std::vector<store::ContainerInfo> all;
    std::string after;
    for (;;) {
      std::vector<store::ContainerInfo> page;
      std::string next;
      REQUIRE(e->ListContainers(filter, after, limit, &page, &next).ok());
      for (const auto& c : page) {
        CHECK(c.id > after);
        after = c.id;
        all.push_back(c);
      }
      if (next.empty()) return all;
      REQUIRE((next > after || (!page.empty() && next == after)));
      after = next;
    }
  };
  std::set<std::string> listed;
  for (const auto& c : list({}, 8)) CHECK(listed.insert(c.id).second);
  CHECK(listed == registered);
  store::ContainerFilter picked;
  picked.status = "picked";
  auto held = list(picked, 2);
  CHECK(held.size() == 5);
  for (const auto& c : held) {
    CHECK(c.region == "eeur");
    CHECK(c.session_id.has_value());
  }
  store::ContainerFilter weur;
  weur.region = "weur";
  weur.pool = "p";
  CHECK(list(weur, 100).size() == 15);
  weur.pool = "other";
  CHECK(list(weur, 100).empty());
}

namespace {

// Many containers and sessions are spread over kManyPools pools (pool i %
// kManyPools): a claim walks its pool's claimable index, where on
// PostgreSQL the entries of rows claimed since the last vacuum stay until
// then, so thousands of claims on one pool would each step over all of the
// earlier ones.
constexpr int kManyPools = 50;
std::string ManyPool(size_t i) { return "p" + std::to_string(i % kManyPools); }

// Claims one session for each of `labels` (its labels' JSON) of `tenant`,
// in `region`, all at once (the writers commit them in groups), the i-th in
// ManyPool(i): thousands in seconds on either engine. Returns their session
// ids in the same order.
std::vector<std::string> ClaimMany(store::Storage* s, const std::string& region,
                                   const std::string& tenant,
                                   const std::vector<std::string>& labels) {
  std::vector<std::string> ids(labels.size());
  constexpr size_t kWave = 500;  // in flight at once, well below a writer's queue bound
  for (size_t start = 0; start < labels.size(); start += kWave) {
    const size_t end = std::min(labels.size(), start + kWave);
    std::vector<std::promise<store::SessionResult>> done(end - start);
    for (size_t i = start; i < end; ++i) {
      store::ClaimRequest req;
      req.caller.tenant = tenant;
      req.region = region;
      req.pool = ManyPool(i);
      req.lease_ms = 600000;
      req.labels = labels[i];
      s->Claim(std::move(req),
               [&done, i, start](store::SessionResult r) { done[i - start].set_value(std::move(r)); });
    }
    for (size_t i = start; i < end; ++i) {
      store::SessionResult r = done[i - start].get_future().get();
      INFO(r.message);
      REQUIRE(r.outcome == Outcome::kOk);
      ids[i] = r.session.session_id;
    }
  }
  return ids;
}

// n containers of `region`, the i-th in ManyPool(i), in batches of 1,000.
void RegisterMany(store::Storage* s, const std::string& prefix, int n, const std::string& region) {
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < n; ++i) {
    specs.push_back(
        {prefix + std::to_string(i), region, ManyPool(static_cast<size_t>(i)), 0, "{}", 1, {}});
    if (specs.size() == 1000 || i == n - 1) {
      auto r = Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
      INFO(r.message);
      REQUIRE(r.outcome == Outcome::kOk);
      specs.clear();
    }
  }
}

// One page, as a client asks for it.
struct Page {
  std::vector<store::Session> items;
  std::string next_after;
};
Page ListPage(store::Storage* s, const store::SessionFilter& filter, const std::string& after,
              int limit) {
  Page p;
  store::Status st = s->ListSessions(filter, after, limit, &p.items, &p.next_after);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return p;
}

}  // namespace

TEST_CASE("storage: a list page examines a bounded number of sessions: a filter that matches "
          "nothing among 3,000 answers an empty page with a cursor, and following cursors lists "
          "each match once") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  // Tenant a: 3,000 sessions over three regions (each a shard of its own
  // when sharded); one in 300 labelled rare. Tenant b: three. (5,000 took
  // PostgreSQL's writer half a minute to claim; 3,000 are already three
  // bounds.)
  const std::vector<std::string> regions = {"weur", "eeur", "wnam"};
  std::set<std::string> rare, of_b;
  int of_a = 0;
  for (size_t r = 0; r < regions.size(); ++r) {
    const int n = 1000;
    RegisterMany(e.storage.get(), regions[r] + "-", n + kManyPools, regions[r]);
    std::vector<std::string> labels;
    for (int i = 0; i < n; ++i) {
      labels.push_back((of_a + i) % 300 == 0 ? R"({"kind":"rare"})" : R"({"kind":"plain"})");
    }
    const auto ids = ClaimMany(e.storage.get(), regions[r], "a", labels);
    for (size_t i = 0; i < ids.size(); ++i) {
      if ((of_a + static_cast<int>(i)) % 300 == 0) rare.insert(ids[i]);
    }
    of_a += n;
    of_b.insert(ClaimMany(e.storage.get(), regions[r], "b", {"{}"}).front());
  }
  REQUIRE(of_a == 3000);
  REQUIRE(rare.size() == 10);
  // The bound of a page of 10: max(4 x 10, 1000) (docs/api.md "Lists").
  const int64_t bound = 1000;
  CHECK(store::ListExamineBound(10) == bound);
  // What one page may examine in all: the bound in each SQLite shard.
  const int64_t page_bound = bound * (e.engine == "sqlite-sharded" ? 3 : 1);

  // Tenant b's page reads b's sessions only: all three, no cursor.
  store::SessionFilter b;
  b.tenant = "b";
  Page page = ListPage(e.storage.get(), b, "", 10);
  std::set<std::string> listed;
  for (const auto& s : page.items) listed.insert(s.session_id);
  CHECK(listed == of_b);
  CHECK(page.next_after.empty());
  b.label_key = "kind";
  b.label_value = "nothing";
  page = ListPage(e.storage.get(), b, "", 10);
  CHECK(page.items.empty());
  CHECK(page.next_after.empty());

  // Tenant a with a label no session has: the first page stops after the
  // bound, empty, with where to go on; following it ends, every page empty.
  store::SessionFilter a;
  a.tenant = "a";
  a.label_key = "kind";
  a.label_value = "nothing";
  for (const store::SessionFilter& nothing :
       {a, store::SessionFilter{"", "weur", "no-such-pool", "", ""}}) {
    INFO("tenant '" << nothing.tenant << "' pool '" << nothing.pool << "'");
    page = ListPage(e.storage.get(), nothing, "", 10);
    CHECK(page.items.empty());
    CHECK_FALSE(page.next_after.empty());
    int pages = 1;
    std::string after = page.next_after;
    while (!after.empty()) {
      Page next = ListPage(e.storage.get(), nothing, after, 10);
      CHECK(next.items.empty());
      if (!next.next_after.empty()) CHECK(next.next_after > after);
      after = next.next_after;
      REQUIRE(++pages <= 3003 / bound * 3 + 3);
    }
    CHECK(pages >= 3003 / page_bound);  // each page examined at most the bound
  }

  // The rare label: each of the ten listed once, over short pages.
  a.label_value = "rare";
  int pages = 0;
  std::multiset<std::string> seen;
  for (const auto& s : AllSessions(e.storage.get(), a, 10, &pages)) seen.insert(s.session_id);
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == rare);
  CHECK(seen.size() == rare.size());
  CHECK(pages >= 3000 / page_bound);

  // Containers: a status no container has, 3,150 of them.
  store::ContainerFilter dead;
  dead.status = "dead";
  const int container_pages = PagesOfNothing<store::ContainerInfo>(
      [&](const std::string& after, std::vector<store::ContainerInfo>* items, std::string* next) {
        return e->ListContainers(dead, after, 10, items, next);
      },
      3150 / bound * 3 + 3);
  CHECK(container_pages >= 3150 / page_bound);
}

TEST_CASE("storage: paging with filters lists every matching lasting session exactly once while "
          "other sessions are claimed and released (random limits and filters)") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  const std::vector<std::string> regions = {"weur", "eeur", "wnam"};
  // 3,600 lasting sessions (1,200 a region, so that each SQLite shard holds
  // more than a page examines), of tenants t1 and t2, one in 40 labelled
  // rare: rarer than a page's bound can fill, so pages stop at the bound,
  // short, with a cursor, and shards stop at different places.
  struct Lasting {
    std::string tenant, region;
    bool rare;
  };
  std::map<std::string, Lasting> lasting;
  for (const auto& region : regions) {
    RegisterMany(e.storage.get(), region + "-", 1300, region);  // 26 a pool
    for (const std::string tenant : {"t1", "t2"}) {
      std::vector<std::string> labels;
      for (int i = 0; i < 600; ++i) {
        labels.push_back(i % 40 == 0 ? R"({"kind":"rare"})" : R"({"kind":"plain"})");
      }
      const auto ids = ClaimMany(e.storage.get(), region, tenant, labels);
      for (size_t i = 0; i < ids.size(); ++i) lasting[ids[i]] = {tenant, region, i % 40 == 0};
    }
  }
  REQUIRE(lasting.size() == 3600);

  // Meanwhile sessions of t1 and t2 come and go on the 300 containers left
  // (2 a pool), some labelled rare too.
  std::atomic<bool> stop{false};
  std::atomic<int> churned{0};
  std::thread churn([&] {
    int i = 0;
    while (!stop.load()) {
      const std::string tenant = i % 2 == 0 ? "t1" : "t2";
      store::ClaimRequest req;
      req.caller.tenant = tenant;
      req.region = regions[static_cast<size_t>(i % 3)];
      req.pool = ManyPool(static_cast<size_t>(i / 3));
      req.lease_ms = 60000;
      req.labels = i % 4 == 0 ? R"({"kind":"rare"})" : "{}";
      ++i;
      auto c = Await<store::SessionResult>([&](auto cb) { e->Claim(std::move(req), cb); });
      if (c.outcome != Outcome::kOk) continue;
      Await<store::SessionResult>([&](auto cb) {
        e->Release(Tenant(tenant), c.session.session_id, c.session.token, cb);
      });
      churned.fetch_add(1);
    }
  });

  std::mt19937 random(20261125);
  for (int round = 0; round < 12; ++round) {
    store::SessionFilter filter;
    if (random() % 3 != 0) filter.tenant = random() % 2 == 0 ? "t1" : "t2";
    if (random() % 2 == 0) filter.region = regions[random() % 3];
    if (random() % 3 != 0) {
      filter.label_key = "kind";
      filter.label_value = "rare";
    }
    const int limit = 1 + static_cast<int>(random() % 60);
    INFO("round " << round << ": tenant '" << filter.tenant << "' region '" << filter.region
                  << "' label '" << filter.label_value << "' limit " << limit);
    int pages = 0;
    std::map<std::string, int> seen;
    for (const auto& s : AllSessions(e.storage.get(), filter, limit, &pages)) {
      ++seen[s.session_id];
      // Nothing the filter does not match, lasting or not.
      if (!filter.tenant.empty()) CHECK(s.tenant == filter.tenant);
      if (!filter.region.empty()) CHECK(s.region == filter.region);
      if (!filter.label_key.empty()) CHECK(s.labels == R"({"kind":"rare"})");
    }
    for (const auto& [id, l] : lasting) {
      const bool matches = (filter.tenant.empty() || l.tenant == filter.tenant) &&
                           (filter.region.empty() || l.region == filter.region) &&
                           (filter.label_key.empty() || l.rare);
      const auto found = seen.find(id);
      const int times = found == seen.end() ? 0 : found->second;
      if (times != (matches ? 1 : 0)) FAIL_CHECK(id << " listed " << times << " times");
    }
    for (const auto& [id, n] : seen) {
      if (n != 1) FAIL_CHECK(id << " listed " << n << " times");
    }
  }
  stop = true;
  churn.join();
  INFO(churned.load() << " sessions came and went during the listings");
  CHECK(churned.load() > 0);
}

// What waiting claims read instead of claiming (the allocator's probe): a
// pool is registered when any container of it exists, claimable when a claim
// could take one now.
TEST_CASE("storage: ProbePools tells registered pools from made-up ones and claimable from not") {
  store::ClaimPolicy policy;
  policy.dead_after_ms = 400;
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS, policy);
  Register(e.storage.get(), {"w1"}, "weur");
  Register(e.storage.get(), {"e1"}, "eeur");
  auto probe = [&] {
    std::vector<store::PoolProbe> pools = {
        {"weur", "p"}, {"eeur", "p"}, {"weur", "other"}, {"nowhere", "p"}, {"neur", "p"}};
    REQUIRE(e->ProbePools(&pools).ok());
    std::vector<std::string> seen;
    for (const auto& p : pools) {
      seen.push_back(p.region + "/" + p.pool + (p.registered ? " registered" : "") +
                     (p.claimable ? " claimable" : ""));
    }
    return seen;
  };
  CHECK(probe() == std::vector<std::string>{"weur/p registered claimable",
                                            "eeur/p registered claimable", "weur/other",
                                            "nowhere/p", "neur/p"});
  // Held, drained: registered, nothing to take.
  REQUIRE(Claim(e.storage.get(), "weur").outcome == Outcome::kOk);
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { e->Drain("e1", cb); }).outcome ==
          Outcome::kOk);
  Register(e.storage.get(), {"n1"}, "neur");
  CHECK(probe() == std::vector<std::string>{"weur/p registered", "eeur/p registered",
                                            "weur/other", "nowhere/p",
                                            "neur/p registered claimable"});
  // Silent past dead_after_ms: still registered, no longer claimable.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  CHECK(probe().back() == "neur/p registered");
  std::vector<store::PoolProbe> none;
  CHECK(e->ProbePools(&none).ok());
}

namespace {

store::SessionResult Release(store::Storage* s, const store::Caller& caller,
                             const store::Session& session, int64_t token) {
  return Await<store::SessionResult>(
      [&](auto cb) { s->Release(caller, session.session_id, token, cb); });
}

// How GetSession, Renew and Release (with `token`) answer an ended session:
// the outcome's name and the end reason of each.
std::vector<std::string> AnswersTo(store::Storage* s, const store::Caller& caller,
                                   const store::Session& session, int64_t token) {
  std::vector<std::string> out;
  for (const store::SessionResult& r :
       {s->GetSession(caller, session.session_id),
        Await<store::SessionResult>(
            [&](auto cb) { s->Renew(caller, session.session_id, token, 60000, cb); }),
        Release(s, caller, session, token)}) {
    out.push_back(Name(r.outcome) + ":" + r.end.reason);
  }
  return out;
}

std::vector<std::string> Ended(const std::string& reason) {
  const std::string a = "session_ended:" + reason;
  return {a, a, a};
}

// Prunes every partition's history older than history_ms, keeping at most
// max_rows; returns how many went.
int64_t Prune(store::Storage* s, int64_t history_ms, int64_t max_rows) {
  int64_t total = 0;
  for (int p = 0; p < s->partitions(); ++p) {
    int64_t pruned = 0;
    REQUIRE(s->PruneSessionHistory(p, history_ms, max_rows, 1000, &pruned).ok());
    total += pruned;
  }
  return total;
}

// The fleet's sums as "region/pool ok no_capacity" lines, and its nodes.
std::vector<std::string> FleetLines(store::Storage* s, int64_t window_ms, int64_t* nodes) {
  store::FleetClaimCounts fleet;
  const store::Status st = s->ReadFleetClaimCounts(window_ms, &fleet);
  INFO(st.ToString());
  REQUIRE(st.ok());
  *nodes = fleet.nodes;
  std::vector<std::string> lines;
  for (const auto& p : fleet.pools) {
    lines.push_back(p.region + "/" + p.pool + " " + std::to_string(p.ok) + " " +
                    std::to_string(p.no_capacity));
  }
  return lines;
}

}  // namespace

TEST_CASE("storage: an ended session says why, to its tenant and an admin, until it is pruned") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"c1", "c2", "c3", "c4", "c5"});
  const int64_t before = base::NowMs();
  auto released = Claim(s, "weur", "t1");
  auto by_admin = Claim(s, "weur", "t1");
  auto abandoned = Claim(s, "weur", "t1");
  auto expired = Claim(s, "weur", "t1", "", /*lease_ms=*/1);
  auto dead = Claim(s, "weur", "t1");
  for (const auto* c : {&released, &by_admin, &abandoned, &expired, &dead}) {
    REQUIRE(c->outcome == Outcome::kOk);
  }
  store::Caller admin = Tenant("ops");
  admin.admin = true;
  store::Caller allocator = admin;
  allocator.abandoning = true;
  REQUIRE(Release(s, Tenant("t1"), released.session, released.session.token).outcome ==
          Outcome::kOk);
  REQUIRE(Release(s, admin, by_admin.session, by_admin.session.token).outcome == Outcome::kOk);
  REQUIRE(Release(s, allocator, abandoned.session, abandoned.session.token).outcome ==
          Outcome::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // An expired lease the reaper has not freed yet has ended too.
  CHECK(AnswersTo(s, Tenant("t1"), expired.session, expired.session.token) == Ended("expired"));
  int64_t ended = 0;
  REQUIRE(e->SweepExpiredLeases(0, 100, &ended).ok());
  REQUIRE(ended == 1);
  for (int p = 0; p < e->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(e->SweepSilentContainers(p, [] { return base::NowMs() + 60000; }, store::HeldPools{}, 100, &sweep).ok());
  }

  CHECK(AnswersTo(s, Tenant("t1"), by_admin.session, by_admin.session.token + 1) ==
        Ended("released_by_admin"));
  CHECK(AnswersTo(s, Tenant("t1"), abandoned.session, abandoned.session.token) ==
        Ended("abandoned"));
  CHECK(AnswersTo(s, Tenant("t1"), expired.session, expired.session.token) == Ended("expired"));
  CHECK(AnswersTo(s, Tenant("t1"), dead.session, dead.session.token) == Ended("container_dead"));
  // Another tenant learns nothing; an admin reads every tenant's.
  CHECK(Name(e->GetSession(Tenant("t2"), dead.session.session_id).outcome) == "forbidden");
  const store::SessionResult read = e->GetSession(admin, released.session.session_id);
  CHECK(Name(read.outcome) == "session_ended");
  CHECK(read.end.reason == "released");
  CHECK(read.end.ended_at_ms >= before);
  CHECK(read.end.ended_at_ms <= base::NowMs());
  CHECK(read.session.container_id == released.session.container_id);
  CHECK(read.session.token == released.session.token);
  // An expired session ended when its lease did, not when it was swept.
  CHECK(e->GetSession(admin, expired.session.session_id).end.ended_at_ms ==
        expired.session.lease_expires_at_ms);

  // Within the window nothing is pruned; past it, every ended session is
  // not_found again.
  CHECK(Prune(s, 3600000, 1000000) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(Prune(s, 0, 1000000) == 5);
  CHECK(Name(e->GetSession(admin, released.session.session_id).outcome) == "not_found");
  CHECK(Name(e->GetSession(admin, dead.session.session_id).outcome) == "not_found");
  CHECK(Name(Release(s, Tenant("t1"), released.session, released.session.token).outcome) ==
        "not_found");
}

TEST_CASE("storage: a release repeated with the session's token succeeds again, another token is "
          "session_ended") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"c1"});
  auto c = Claim(s, "weur", "t1");
  REQUIRE(c.outcome == Outcome::kOk);
  REQUIRE(Release(s, Tenant("t1"), c.session, c.session.token).outcome == Outcome::kOk);
  const store::SessionResult again = Release(s, Tenant("t1"), c.session, c.session.token);
  CHECK(again.outcome == Outcome::kOk);
  CHECK(again.end.reason == "released");  // a repeat, told apart from the first
  const store::SessionResult other = Release(s, Tenant("t1"), c.session, c.session.token - 1);
  CHECK(Name(other.outcome) == "session_ended");
  CHECK(other.end.reason == "released");
  CHECK(Name(Release(s, Tenant("t2"), c.session, c.session.token).outcome) == "forbidden");
  // The container is free, once: the repeat ended nothing more.
  auto next = Claim(s, "weur", "t1");
  REQUIRE(next.outcome == Outcome::kOk);
  CHECK(Release(s, Tenant("t1"), c.session, c.session.token).outcome == Outcome::kOk);
  CHECK(e->GetSession(Tenant("t1"), next.session.session_id).outcome == Outcome::kOk);
}

TEST_CASE("storage: a released session's history is the session as it was, and an admin releasing "
          "its own tenant's session released it") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"c1", "c2"});
  const std::string labels = R"({"owner":"ci-7"})";
  auto labelled = ClaimLabelled(s, "weur", "t1", labels);
  auto own = Claim(s, "weur", "ops");
  REQUIRE(labelled.outcome == Outcome::kOk);
  REQUIRE(own.outcome == Outcome::kOk);
  auto renewed = Await<store::SessionResult>([&](auto cb) {
    s->Renew(Tenant("t1"), labelled.session.session_id, labelled.session.token, 120000, cb);
  });
  REQUIRE(renewed.outcome == Outcome::kOk);
  store::Caller admin = Tenant("ops");
  admin.admin = true;
  REQUIRE(Release(s, Tenant("t1"), labelled.session, labelled.session.token).outcome ==
          Outcome::kOk);
  REQUIRE(Release(s, admin, own.session, own.session.token).outcome == Outcome::kOk);
  const store::SessionResult read = s->GetSession(Tenant("t1"), labelled.session.session_id);
  CHECK(Name(read.outcome) == "session_ended");
  CHECK(read.end.reason == "released");
  CHECK(read.session.tenant == "t1");
  CHECK(read.session.labels == labels);
  CHECK(read.session.region == "weur");
  CHECK(read.session.container_id == labelled.session.container_id);
  CHECK(read.session.lease_expires_at_ms == renewed.session.lease_expires_at_ms);
  CHECK(read.end.ended_at_ms < read.session.lease_expires_at_ms);
  CHECK(s->GetSession(admin, own.session.session_id).end.reason == "released");
  // Both containers are free again.
  CHECK(Claim(s, "weur").outcome == Outcome::kOk);
  CHECK(Claim(s, "weur").outcome == Outcome::kOk);
}

TEST_CASE("storage: the history keeps at most its bound of rows, the oldest pruned first") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"c1"});
  std::vector<store::Session> ended;
  for (int i = 0; i < 5; ++i) {
    auto c = Claim(s, "weur", "t1");
    REQUIRE(c.outcome == Outcome::kOk);
    REQUIRE(Release(s, Tenant("t1"), c.session, c.session.token).outcome == Outcome::kOk);
    ended.push_back(c.session);
  }
  CHECK(Prune(s, 3600000, 3) == 2);
  CHECK(Prune(s, 3600000, 3) == 0);
  for (int i = 0; i < 5; ++i) {
    CHECK(Name(s->GetSession(Tenant("t1"), ended[i].session_id).outcome) ==
          (i < 2 ? "not_found" : "session_ended"));
  }
}

namespace {

// Every ended session `filter` matches, page after page of `limit`: their
// ids in the order listed, and how many pages it took.
std::vector<std::string> ListEnded(store::Storage* s, const store::SessionFilter& filter,
                                   int limit, int* pages = nullptr) {
  std::vector<std::string> ids;
  std::string after;
  for (int page = 1;; ++page) {
    std::vector<store::EndedSession> items;
    std::string next;
    REQUIRE(s->ListEndedSessions(filter, after, limit, &items, &next).ok());
    REQUIRE(items.size() <= static_cast<size_t>(limit));
    for (const auto& item : items) ids.push_back(item.session.session_id);
    if (pages != nullptr) *pages = page;
    if (next.empty()) return ids;
    REQUIRE(page < 1000);
    after = next;
  }
}

}  // namespace

TEST_CASE("storage: ended sessions list newest first, filtered, each once over pages") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"w1", "w2"}, "weur");
  Register(s, {"e1"}, "eeur");
  // Claimed and released one after another, in two regions (two shards of
  // the sharded engine) and by two tenants; one still held.
  std::vector<store::Session> ended;
  for (int i = 0; i < 9; ++i) {
    auto c = Claim(s, i % 3 == 0 ? "eeur" : "weur", i % 2 == 0 ? "t1" : "t2");
    REQUIRE(c.outcome == Outcome::kOk);
    REQUIRE(Release(s, Tenant(c.session.tenant), c.session, c.session.token).outcome ==
            Outcome::kOk);
    ended.push_back(c.session);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // ids made in later ms
  }
  auto live = Claim(s, "weur", "t1");
  REQUIRE(live.outcome == Outcome::kOk);
  std::vector<std::string> newest_first;
  for (auto it = ended.rbegin(); it != ended.rend(); ++it) newest_first.push_back(it->session_id);

  for (int limit : {1, 2, 4, 100}) {
    INFO("limit " << limit);
    CHECK(ListEnded(s, {}, limit) == newest_first);
  }
  std::vector<store::EndedSession> page;
  std::string next;
  REQUIRE(s->ListEndedSessions({}, "", 1, &page, &next).ok());
  REQUIRE(page.size() == 1);
  CHECK(page[0].end.reason == "released");
  CHECK(page[0].session.container_id == ended.back().container_id);
  CHECK(page[0].session.token == ended.back().token);
  CHECK(page[0].end.ended_at_ms > 0);

  // Filters: a tenant's, a region's.
  store::SessionFilter t2;
  t2.tenant = "t2";
  std::vector<std::string> want;
  for (const auto& id : newest_first) {
    for (const auto& sess : ended) {
      if (sess.session_id == id && sess.tenant == "t2") want.push_back(id);
    }
  }
  CHECK(ListEnded(s, t2, 2) == want);
  store::SessionFilter eeur;
  eeur.region = "eeur";
  CHECK(ListEnded(s, eeur, 100).size() == 3);
}

TEST_CASE("storage: a page of ended sessions examines a bounded number: a filter that matches "
          "none of many answers at once with a cursor") {
  Engine e(EDGEALLOC_ENGINES);
  store::Storage* s = e.storage.get();
  Register(s, {"c1"});
  const int64_t n = store::ListExamineBound(1) + 5;
  for (int64_t i = 0; i < n; ++i) {
    auto c = Claim(s, "weur", "t1");
    REQUIRE(c.outcome == Outcome::kOk);
    REQUIRE(Release(s, Tenant("t1"), c.session, c.session.token).outcome == Outcome::kOk);
  }
  store::SessionFilter nobody;
  nobody.tenant = "t-none";
  CHECK(PagesOfNothing<store::EndedSession>(
            [&](const std::string& after, std::vector<store::EndedSession>* items,
                std::string* next) { return s->ListEndedSessions(nobody, after, 1, items, next); },
            1000) == 2);
  CHECK(static_cast<int64_t>(ListEnded(s, {}, 1000).size()) == n);
}

// Each node publishes its own cumulative counts; a dashboard reads the
// fleet's: the sums over the nodes that published within the window, read
// through any node. A node's later publish replaces its earlier one.
TEST_CASE("storage: the fleet's claim counts sum the nodes that published in the window") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  std::unique_ptr<store::Storage> second = e.Open();
  const int64_t kWindow = 60000;
  REQUIRE(e->PublishClaimCounts("a", {{"", "", 5, 2}, {"weur", "chrome", 5, 2}}, kWindow, 100)
              .ok());
  REQUIRE(second->PublishClaimCounts("b", {{"", "", 7, 0}, {"weur", "chrome", 3, 0},
                                           {"eeur", "chrome", 4, 0}},
                                     kWindow, 100)
              .ok());
  int64_t nodes = 0;
  CHECK(FleetLines(second.get(), kWindow, &nodes) ==
        std::vector<std::string>{"/ 12 2", "eeur/chrome 4 0", "weur/chrome 8 2"});
  CHECK(nodes == 2);
  // a counted more: its row is replaced, not added to.
  REQUIRE(e->PublishClaimCounts("a", {{"", "", 6, 3}, {"weur", "chrome", 6, 3}}, kWindow, 100)
              .ok());
  CHECK(FleetLines(e.storage.get(), kWindow, &nodes) ==
        std::vector<std::string>{"/ 13 3", "eeur/chrome 4 0", "weur/chrome 9 3"});
  CHECK(nodes == 2);
  // Nobody published yet: nothing, no nodes.
  Engine empty(e.engine);
  CHECK(FleetLines(empty.storage.get(), kWindow, &nodes).empty());
  CHECK(nodes == 0);
}

// A node that stopped publishing (stopped, or restarted under a new id)
// leaves the sums once its last publish is older than the window, and its
// rows are deleted by a later publish of any node, at most max_pruned a time.
TEST_CASE("storage: a silent node leaves the fleet's sums after the window, and is pruned") {
  Engine e(EDGEALLOC_ENGINES);
  REQUIRE(e->PublishClaimCounts("old", {{"", "", 9, 9}, {"weur", "p", 9, 9}}, 60000, 100).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Pruning nothing yet (silent for less than 60 s) but outside a 1 s window.
  REQUIRE(e->PublishClaimCounts("new", {{"", "", 1, 0}, {"weur", "p", 1, 0}}, 60000, 100).ok());
  int64_t nodes = 0;
  CHECK(FleetLines(e.storage.get(), 1000, &nodes) ==
        std::vector<std::string>{"/ 1 0", "weur/p 1 0"});
  CHECK(nodes == 1);
  CHECK(FleetLines(e.storage.get(), 60000, &nodes) ==
        std::vector<std::string>{"/ 10 9", "weur/p 10 9"});
  CHECK(nodes == 2);
  // Silent for longer than 1 s: pruned, one row a publish.
  REQUIRE(e->PublishClaimCounts("new", {{"", "", 1, 0}}, 1000, 1).ok());
  FleetLines(e.storage.get(), 60000, &nodes);
  CHECK(nodes == 2);  // one of old's rows left
  REQUIRE(e->PublishClaimCounts("new", {{"", "", 1, 0}}, 1000, 1).ok());
  CHECK(FleetLines(e.storage.get(), 60000, &nodes) ==
        std::vector<std::string>{"/ 1 0", "weur/p 1 0"});
  CHECK(nodes == 1);
}
