// Slots and placement (docs/api.md, "Slots" and "Placement") on every
// engine: SQLite, SQLite in shard files and PostgreSQL. A container holds up
// to `slots` sessions, one a slot; a claim takes one free slot in its one
// statement; packed fills a container before opening another, distributed
// spreads.
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "store/row_columns.h"
#include "store/storage.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using store::Placement;
using testing::Await;
using testing::Engine;
using testing::Tenant;

store::SessionResult Claim(store::Storage* s, Placement placement = Placement::kDefault,
                           const std::string& tenant = "t1", int64_t lease_ms = 60000) {
  store::ClaimRequest req = testing::Req("weur", tenant, "p");
  req.lease_ms = lease_ms;
  req.placement = placement;
  return Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
}

store::SessionResult Release(store::Storage* s, const store::Session& session) {
  return Await<store::SessionResult>([&](auto cb) {
    s->Release(Tenant(session.tenant), session.session_id, session.token, cb);
  });
}

// Registers `ids` in weur, pool p, each with `slots` slots; latency i for
// the i-th, so that fittest has an order to prefer.
void Register(store::Storage* s, const std::vector<std::string>& ids, int64_t slots) {
  std::vector<store::ContainerSpec> specs;
  for (size_t i = 0; i < ids.size(); ++i) {
    store::ContainerSpec spec = testing::Spec(ids[i], "weur", "p", static_cast<int64_t>(i));
    spec.slots = slots;
    specs.push_back(spec);
  }
  auto r = Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
  INFO(r.message);
  CHECK(r.message == "");
  REQUIRE(r.outcome == Outcome::kOk);
}

std::vector<std::string> Ids(const std::string& prefix, int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

store::ContainerInfo Get(store::Storage* s, const std::string& id) {
  auto r = s->GetContainer(id);
  REQUIRE(r.outcome == Outcome::kOk);
  return r.container;
}

}  // namespace

TEST_CASE("slots: each claim takes a free slot of the container, tokens grow across its slots, "
          "picked only when every slot is used") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {"c"}, 3);
  CHECK(Get(e.storage.get(), "c").slots == 3);
  std::vector<store::Session> held;
  std::set<int64_t> slots;
  for (int i = 0; i < 3; ++i) {
    CHECK(Get(e.storage.get(), "c").status == "available");
    auto c = Claim(e.storage.get());
    INFO(c.message);
    REQUIRE(c.outcome == Outcome::kOk);
    CHECK(c.session.container_id == "c");
    if (!held.empty()) CHECK(c.session.token > held.back().token);
    slots.insert(c.session.slot);
    held.push_back(c.session);
    CHECK(Get(e.storage.get(), "c").slots_used == i + 1);
  }
  CHECK(slots == std::set<int64_t>{0, 1, 2});
  const auto full = Get(e.storage.get(), "c");
  CHECK(full.status == "picked");
  CHECK_FALSE(full.session_id.has_value());  // several sessions: listed, not one shown
  CHECK(Claim(e.storage.get()).outcome == Outcome::kNoCapacity);

  // A release frees its own slot only; the next claim takes that slot, with
  // a token above every one before.
  REQUIRE(Release(e.storage.get(), held[1]).outcome == Outcome::kOk);
  CHECK(Get(e.storage.get(), "c").status == "available");
  CHECK(e->GetSession(Tenant("t1"), held[0].session_id).outcome == Outcome::kOk);
  CHECK(e->GetSession(Tenant("t1"), held[2].session_id).outcome == Outcome::kOk);
  auto again = Claim(e.storage.get());
  REQUIRE(again.outcome == Outcome::kOk);
  CHECK(again.session.slot == 1);
  CHECK(again.session.token > held[2].token);
  CHECK(e->GetSession(Tenant("t1"), again.session.session_id).session.slot == 1);
}

// The columns of kSessionColumns where two sessions differ (empty: none).
std::vector<std::string> Differences(const store::Session& a, const store::Session& b) {
  std::vector<std::string> out;
  for (const auto& column : store::kSessionColumns) {
    const bool same = column.text ? a.*column.text == b.*column.text
                      : column.number ? a.*column.number == b.*column.number
                      : column.flag ? a.*column.flag == b.*column.flag
                                    : a.*column.maybe == b.*column.maybe;
    if (!same) out.push_back(column.name);
  }
  return out;
}

// A claim's reply is made from what its statement took, not read back
// (SQLite: store/sqlite/sqlite_storage_sessions.cc): it must be the session
// a read of it returns, column for column, with and without labels, on a
// slot past the first, after a fallback to another region.
TEST_CASE("slots: a claim answers its session as a read of it returns it, every column") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::ContainerSpec spec = testing::Spec("c", "weur", "p", 3, R"({"endpoint":"ws://c:9222"})");
  spec.slots = 2;
  store::ContainerSpec other = testing::Spec("n", "wnam", "p", 1, R"({"endpoint":"ws://n"})");
  auto r = Await<store::ContainerResult>([&](auto cb) { e->Register({spec, other}, cb); });
  REQUIRE(r.outcome == Outcome::kOk);
  std::vector<store::ClaimRequest> claims(3, testing::Req("weur", "t1", "p"));
  claims[0].labels = R"({"job":"a"})";
  claims[2].fallback_regions = {"wnam"};  // weur is full by then
  for (store::ClaimRequest& req : claims) {
    req.lease_ms = 60000;
    auto c = Await<store::SessionResult>([&](auto cb) { e->Claim(req, cb); });
    INFO(c.message);
    REQUIRE(c.outcome == Outcome::kOk);
    auto read = e->GetSession(Tenant("t1"), c.session.session_id);
    REQUIRE(read.outcome == Outcome::kOk);
    CHECK(Differences(c.session, read.session) == std::vector<std::string>{});
  }
}

TEST_CASE("slots: expiry, drain, death and re-registration act per session") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {"c"}, 4);
  auto shortlived = Claim(e.storage.get(), Placement::kDefault, "t1", /*lease_ms=*/1);
  auto lasting = Claim(e.storage.get());
  auto third = Claim(e.storage.get());
  REQUIRE(shortlived.outcome == Outcome::kOk);
  REQUIRE(lasting.outcome == Outcome::kOk);
  REQUIRE(third.outcome == Outcome::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Every partition's sweep (PostgreSQL's leases are swept by partition 0).
  int64_t ended = 0;
  for (int p = 0; p < e->partitions(); ++p) {
    int64_t n = 0;
    REQUIRE(e->SweepExpiredLeases(p, 100, &n).ok());
    ended += n;
  }
  CHECK(ended == 1);
  CHECK(Get(e.storage.get(), "c").slots_used == 2);
  CHECK(e->GetSession(Tenant("t1"), shortlived.session.session_id).end.reason == "expired");
  CHECK(e->GetSession(Tenant("t1"), lasting.session.session_id).outcome == Outcome::kOk);

  // Lowered below what it holds: no slot is free until enough sessions end.
  Register(e.storage.get(), {"c"}, 1);
  CHECK(Get(e.storage.get(), "c").status == "picked");
  CHECK(Claim(e.storage.get()).outcome == Outcome::kNoCapacity);
  REQUIRE(Release(e.storage.get(), third.session).outcome == Outcome::kOk);
  CHECK(Get(e.storage.get(), "c").status == "picked");  // 1 of 1 used
  Register(e.storage.get(), {"c"}, 2);
  CHECK(Get(e.storage.get(), "c").status == "available");

  // A drain stops new claims on every slot; the session it holds lives on.
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { e->Drain("c", cb); }).outcome ==
          Outcome::kOk);
  CHECK(Get(e.storage.get(), "c").status == "draining");
  CHECK(Claim(e.storage.get()).outcome == Outcome::kNoCapacity);
  CHECK(e->GetSession(Tenant("t1"), lasting.session.session_id).outcome == Outcome::kOk);
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { e->Undrain("c", cb); }).outcome ==
          Outcome::kOk);
  auto fourth = Claim(e.storage.get());
  REQUIRE(fourth.outcome == Outcome::kOk);

  // A container with sessions is not deleted; its death ends each of them.
  CHECK(Await<store::ContainerResult>([&](auto cb) { e->Remove("c", cb); }).outcome ==
        Outcome::kConflict);
  const int64_t future = base::NowMs() + 60000;
  int64_t held_dead = 0, sessions_ended = 0;
  for (int p = 0; p < e->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(e->SweepSilentContainers(p, [future] { return future; }, store::HeldPools{}, 100,
                                     &sweep)
                .ok());
    held_dead += sweep.held_dead;
    sessions_ended += sweep.sessions_ended;
  }
  CHECK(held_dead == 1);       // one container,
  CHECK(sessions_ended == 2);  // and each of its sessions ended
  for (const auto* s : {&lasting.session, &fourth.session}) {
    auto r = e->GetSession(Tenant("t1"), s->session_id);
    CHECK(r.outcome == Outcome::kSessionEnded);
    CHECK(r.end.reason == "container_dead");
  }
  const auto dead = Get(e.storage.get(), "c");
  CHECK(dead.status == "dead");
  CHECK(dead.slots_used == 0);
}

// The exclusivity of slots under a storm: concurrent claims and releases
// (on PostgreSQL from three nodes) on containers of 1 to 8 slots. At no
// moment does a container hold more sessions than its slots, nor one slot
// two sessions, and no token repeats on a container.
TEST_CASE("slots: a storm of claims and releases never overfills a container, never gives a slot "
          "twice, never repeats a token") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  std::map<std::string, int64_t> slots_of;
  for (int64_t slots = 1; slots <= 8; ++slots) {
    const std::string id = "c" + std::to_string(slots);
    Register(e.storage.get(), {id}, slots);
    slots_of[id] = slots;
  }
  std::vector<std::unique_ptr<store::Storage>> others;
  if (e.engine == "postgres") {
    for (int i = 0; i < 2; ++i) others.push_back(e.Open());
  }
  std::mutex mu;
  std::map<std::string, int64_t> holding;                 // live sessions a container
  std::set<std::pair<std::string, int64_t>> slots_held;   // (container, slot) live
  std::set<std::pair<std::string, int64_t>> tokens;       // every token a container gave
  int overfull = 0, doubles = 0, repeats = 0, claims = 0, errors = 0, bad_slot = 0;
  std::string first_error;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  const Placement placements[] = {Placement::kFittest, Placement::kPacked,
                                  Placement::kDistributed};
  for (int t = 0; t < 8; ++t) {
    store::Storage* node = others.empty() || t % 3 == 0 ? e.storage.get() : others[t % 2].get();
    clients.emplace_back([&, node, t] {
      while (!stop.load()) {
        auto c = Claim(node, placements[t % 3], "tenant" + std::to_string(t));
        if (c.outcome == Outcome::kNoCapacity) continue;
        const store::Session s = c.session;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (c.outcome != Outcome::kOk) {
            if (errors++ == 0) first_error = c.message;
            continue;
          }
          ++claims;
          if (++holding[s.container_id] > slots_of[s.container_id]) ++overfull;
          if (s.slot < 0 || s.slot >= slots_of[s.container_id]) ++bad_slot;
          if (!slots_held.insert({s.container_id, s.slot}).second) ++doubles;
          if (!tokens.insert({s.container_id, s.token}).second) ++repeats;
        }
        // Held a moment, so that an overlapping holder would be seen; out
        // of the sets before the release commits.
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        {
          std::lock_guard<std::mutex> lock(mu);
          --holding[s.container_id];
          slots_held.erase({s.container_id, s.slot});
        }
        if (Release(node, s).outcome != Outcome::kOk) {
          std::lock_guard<std::mutex> lock(mu);
          ++errors;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& c : clients) c.join();
  INFO("claims " << claims << " errors " << errors << " (" << e.engine << ") " << first_error);
  CHECK(claims > 50);
  CHECK(overfull == 0);
  CHECK(doubles == 0);
  CHECK(repeats == 0);
  CHECK(bad_slot == 0);
  CHECK(errors == 0);
  for (const auto& [id, slots] : slots_of) CHECK(Get(e.storage.get(), id).slots_used == 0);
}

// Packing is exact: a burst of concurrent packed claims on containers of C
// slots opens ceil(claims / C) of them, and a release in between leaves a
// hole the next claim fills before any empty container is opened.
TEST_CASE("placement: packed claims open ceil(claims / slots) containers, even in a burst") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  constexpr int kSlots = 4, kClaims = 10;
  Register(e.storage.get(), Ids("c", 6), kSlots);
  std::unique_ptr<store::Storage> second;
  if (e.engine == "postgres") second = e.Open();
  std::vector<std::thread> burst;
  std::mutex mu;
  std::vector<store::Session> sessions;
  for (int i = 0; i < kClaims; ++i) {
    store::Storage* node = second && i % 2 == 1 ? second.get() : e.storage.get();
    burst.emplace_back([&, node] {
      auto c = Claim(node, Placement::kPacked);
      std::lock_guard<std::mutex> lock(mu);
      if (c.outcome == Outcome::kOk) sessions.push_back(c.session);
    });
  }
  for (auto& t : burst) t.join();
  REQUIRE(sessions.size() == kClaims);
  std::map<std::string, int> per_container;
  for (const auto& s : sessions) ++per_container[s.container_id];
  CHECK(per_container.size() == (kClaims + kSlots - 1) / kSlots);

  // A hole in a used container is filled before an empty one is opened.
  const store::Session freed = sessions.front();
  REQUIRE(Release(e.storage.get(), freed).outcome == Outcome::kOk);
  auto refill = Claim(e.storage.get(), Placement::kPacked);
  REQUIRE(refill.outcome == Outcome::kOk);
  CHECK(refill.session.container_id == freed.container_id);
  CHECK(refill.session.slot == freed.slot);
}

TEST_CASE("placement: distributed claims give no container a second session while another has "
          "none, and the server's --placement is the default") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), Ids("c", 5), 3);
  std::map<std::string, int> per_container;
  for (int i = 0; i < 10; ++i) {
    auto c = Claim(e.storage.get(), Placement::kDistributed);
    INFO(c.message);
    REQUIRE(c.outcome == Outcome::kOk);
    ++per_container[c.session.container_id];
    int least = 1 << 30, most = 0;
    for (const auto& id : Ids("c", 5)) {
      least = std::min(least, per_container[id]);
      most = std::max(most, per_container[id]);
    }
    CHECK(most - least <= 1);
  }

  store::ClaimPolicy packed;
  packed.placement = Placement::kPacked;
  Engine p(e.engine, packed);
  Register(p.storage.get(), Ids("d", 3), 3);
  std::set<std::string> opened;
  for (int i = 0; i < 3; ++i) {
    auto c = Claim(p.storage.get());  // names no placement: the server's
    REQUIRE(c.outcome == Outcome::kOk);
    opened.insert(c.session.container_id);
  }
  CHECK(opened.size() == 1);
}
