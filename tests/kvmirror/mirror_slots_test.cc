// The mirror counts slots as well as containers (docs/api.md, "Slots"),
// from every partition of either engine: slots of every container, the
// sessions on them, and the free slots claims may take (an available
// container's, never a draining one's).

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "kvmirror/mirror.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace kvmirror {
namespace {

void Add(testing::Engine& e, const std::string& prefix, const std::string& region, int n,
         int64_t slots) {
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < n; ++i) {
    specs.push_back(testing::Spec(prefix + "-" + std::to_string(i), region, "chrome"));
    specs.back().slots = slots;
  }
  auto r = testing::Await<store::ContainerResult>(
      [&](auto cb) { e->Register(std::move(specs), cb); });
  INFO(r.message);
  REQUIRE(r.outcome == store::Outcome::kOk);
}

void ClaimOne(testing::Engine& e, const std::string& region) {
  store::ClaimRequest req = testing::Req(region, "t1", "chrome");
  req.lease_ms = 600000;
  auto r = testing::Await<store::SessionResult>([&](auto cb) { e->Claim(req, cb); });
  INFO(r.message);
  REQUIRE(r.outcome == store::Outcome::kOk);
}

TEST_CASE("mirror slots: slots, sessions and claimable free slots of every pool, every engine") {
  const std::string engine = EDGEALLOC_ENGINES_AND_SHARDS;
  INFO(engine);
  testing::Engine e(engine);
  Add(e, "w", "weur", 3, 4);
  Add(e, "e", "eeur", 2, 3);
  Add(e, "a", "apac", 1, 1);
  for (int i = 0; i < 5; ++i) ClaimOne(e, "weur");
  ClaimOne(e, "eeur");
  ClaimOne(e, "apac");
  // Drained, the least used of weur keeps its sessions but none of its free
  // slots is claimable. (A full one would stay picked: placement is random
  // among the fittest, so any may be full.)
  std::string least = "w-0";
  for (const char* id : {"w-1", "w-2"}) {
    if (e->GetContainer(id).container.slots_used < e->GetContainer(least).container.slots_used) {
      least = id;
    }
  }
  auto drained = testing::Await<store::ContainerResult>([&](auto cb) { e->Drain(least, cb); });
  REQUIRE(drained.outcome == store::Outcome::kOk);
  const int64_t on_drained = e->GetContainer(least).container.slots_used;

  std::vector<std::unique_ptr<store::CapacityReader>> readers;
  for (int p = 0; p < e->partitions(); ++p) {
    readers.push_back(e->NewCapacityReader(p, kReaderBusyTimeoutMs));
  }
  Mirror mirror(std::move(readers), 60000);
  REQUIRE(mirror.RefreshNow().ok());
  auto snap = mirror.Current();
  const StatusCounts* weur = snap->Find("weur", "chrome");
  REQUIRE(weur != nullptr);
  CHECK(weur->slots == 12);
  CHECK(weur->slots_used == 5);
  CHECK(weur->draining == 1);
  CHECK(weur->drained == 1);
  CHECK(weur->slots_free == 8 - (5 - on_drained));
  const StatusCounts* eeur = snap->Find("eeur", "chrome");
  REQUIRE(eeur != nullptr);
  CHECK(*eeur == StatusCounts{.available = 2, .slots = 6, .slots_used = 1, .slots_free = 5});
  // A single-slot container with its session is picked: none free.
  const StatusCounts* apac = snap->Find("apac", "chrome");
  REQUIRE(apac != nullptr);
  CHECK(*apac == StatusCounts{.picked = 1, .slots = 1, .slots_used = 1, .slots_free = 0});
  CHECK(snap->totals().slots == 19);
  CHECK(snap->totals().slots_free == weur->slots_free + 5);
  CHECK(snap->version() >= 1);
  CHECK(snap->ToCapacityJson(snap->as_of_ms()).find(R"("slots":6,"slots_used":1,"slots_free":5)") !=
        std::string::npos);
}

}  // namespace
}  // namespace kvmirror
