// Placement under concurrency, every engine (SQLite, SQLite in shard files,
// PostgreSQL from two nodes): bursts of concurrent `packed` claims with
// releases between them fill the holes of used containers before opening an
// empty one, and open exactly as many as the claims left over need; bursts
// of `distributed` claims give no container a second session while another
// matching one has none.
#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

// Registers `n` containers c0.. in weur, pool p, each with `slots` slots.
void RegisterPool(store::Storage* s, int n, int64_t slots) {
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < n; ++i) {
    store::ContainerSpec spec = testing::Spec("c" + std::to_string(i), "weur", "p", i);
    spec.slots = slots;
    specs.push_back(spec);
  }
  auto r = Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
}

// `n` claims with `placement` at once, spread over `nodes`; the sessions
// they were given (every one must be given one).
std::vector<store::Session> Burst(const std::vector<store::Storage*>& nodes, int n,
                                  Placement placement) {
  std::mutex mu;
  std::vector<store::Session> got;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    store::Storage* node = nodes[static_cast<size_t>(i) % nodes.size()];
    threads.emplace_back([&, node, i] {
      store::ClaimRequest req = testing::Req("weur", "t" + std::to_string(i % 3), "p");
      req.lease_ms = 600000;
      req.placement = placement;
      auto c = Await<store::SessionResult>([&](auto cb) { node->Claim(std::move(req), cb); });
      std::lock_guard<std::mutex> lock(mu);
      if (c.outcome == Outcome::kOk) {
        got.push_back(c.session);
      } else {
        failures.push_back(std::string(store::OutcomeName(c.outcome)) + ": " + c.message);
      }
    });
  }
  for (auto& t : threads) t.join();
  INFO((failures.empty() ? std::string() : failures.front()));
  REQUIRE(failures.empty());
  return got;
}

void Release(store::Storage* s, const store::Session& session) {
  auto r = Await<store::SessionResult>([&](auto cb) {
    s->Release(Tenant(session.tenant), session.session_id, session.token, cb);
  });
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
}

// Where each case starts: `engine` with `n` containers of `slots` slots
// registered (RegisterPool), and the nodes a case claims from: the
// engine's, and on PostgreSQL a second node on the same database.
struct PoolNodes {
  PoolNodes(const std::string& engine, int n, int64_t slots) : e(engine) {
    RegisterPool(e.storage.get(), n, slots);
    nodes.push_back(e.storage.get());
    if (e.engine == "postgres") {
      second = e.Open();
      nodes.push_back(second.get());
    }
  }
  Engine e;
  std::unique_ptr<store::Storage> second;
  std::vector<store::Storage*> nodes;
};

}  // namespace

// Rounds of: a burst of packed claims, then the release of a random part
// of what is held. Every burst fills the free slots of used containers
// before it opens an empty one, and opens exactly ceil(left over / C).
TEST_CASE("placement: packed bursts with releases between them fill every hole before opening "
          "an empty container, and open exactly ceil(left over / slots)") {
  constexpr int kSlots = 4, kContainers = 12;
  const PoolNodes pool(EDGEALLOC_ENGINES_AND_SHARDS, kContainers, kSlots);
  const auto& nodes = pool.nodes;
  std::mt19937 rng(7);
  std::map<std::string, std::vector<store::Session>> held;  // container -> its sessions
  for (int round = 0; round < 6; ++round) {
    int holes = 0, used_before = 0;
    for (const auto& [id, sessions] : held) {
      if (sessions.empty()) continue;
      ++used_before;
      holes += kSlots - static_cast<int>(sessions.size());
    }
    const int claims = 3 + static_cast<int>(rng() % 8);
    INFO("round " << round << ": " << claims << " claims, " << holes << " holes in "
                  << used_before << " used containers (" << pool.e.engine << ")");
    for (const auto& s : Burst(nodes, claims, Placement::kPacked)) {
      held[s.container_id].push_back(s);
    }
    int opened = 0, used_not_full = 0, total = 0;
    for (const auto& [id, sessions] : held) {
      total += static_cast<int>(sessions.size());
      REQUIRE(static_cast<int>(sessions.size()) <= kSlots);
      if (!sessions.empty() && static_cast<int>(sessions.size()) < kSlots) ++used_not_full;
    }
    int used_after = 0;
    for (const auto& [id, sessions] : held) used_after += sessions.empty() ? 0 : 1;
    opened = used_after - used_before;
    const int left_over = std::max(0, claims - holes);
    CHECK(opened == (left_over + kSlots - 1) / kSlots);
    // Opened one while holes were left: an empty container while a used one
    // had a free slot.
    if (opened > 0) CHECK(used_not_full <= 1);
    // Let a random part go: holes in some containers, some emptied.
    for (auto& [id, sessions] : held) {
      std::vector<store::Session> keep;
      for (const auto& s : sessions) {
        if (rng() % 3 == 0) {
          Release(nodes[rng() % nodes.size()], s);
        } else {
          keep.push_back(s);
        }
      }
      sessions = keep;
    }
    REQUIRE(total <= kContainers * kSlots);
  }
}

// Bursts of distributed claims: the first fills every container's first
// slot before any second, the next every second slot, and so on.
TEST_CASE("placement: distributed bursts give no container a second session while another has "
          "none") {
  constexpr int kSlots = 3, kContainers = 6;
  const PoolNodes pool(EDGEALLOC_ENGINES_AND_SHARDS, kContainers, kSlots);
  const auto& nodes = pool.nodes;
  std::map<std::string, int> per_container;
  int claimed = 0;
  for (int burst : {4, 2, 5, 3, 4}) {
    for (const auto& s : Burst(nodes, burst, Placement::kDistributed)) {
      ++per_container[s.container_id];
    }
    claimed += burst;
    int least = kSlots, most = 0;
    for (int i = 0; i < kContainers; ++i) {
      const int n = per_container["c" + std::to_string(i)];
      least = std::min(least, n);
      most = std::max(most, n);
    }
    INFO(claimed << " claimed (" << pool.e.engine << ")");
    CHECK(most - least <= 1);
    CHECK(most == (claimed + kContainers - 1) / kContainers);
  }
}
