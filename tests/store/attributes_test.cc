// Container attributes and claim selectors (API 1.3) through the storage
// seam, every test case once an engine: SQLite, SQLite in 3 shard files and
// PostgreSQL. What one engine does, the others must.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "store/storage.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using testing::Await;
using testing::Engine;

// A container of pool "p" with `attributes` (JSON text; nullopt: none given).
store::ContainerSpec Attributed(const std::string& id, const std::string& region,
                                std::optional<std::string> attributes, int64_t latency_ms = 0) {
  store::ContainerSpec spec = testing::Spec(id, region, "p", latency_ms);
  spec.attributes = std::move(attributes);
  return spec;
}

void Register(store::Storage* s, std::vector<store::ContainerSpec> specs) {
  auto r = Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
}

store::SessionResult ClaimSelected(store::Storage* s, std::vector<store::SelectorTerm> selector,
                                   const std::string& region = "weur",
                                   std::vector<std::string> fallbacks = {}) {
  store::ClaimRequest req = testing::Req(region, "t1", "p");
  req.lease_ms = 60000;
  req.selector = std::move(selector);
  req.fallback_regions = std::move(fallbacks);
  return Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
}

std::string Name(Outcome o) { return store::OutcomeName(o); }

std::string AttributesOf(store::Storage* s, const std::string& id) {
  store::ContainerResult r = s->GetContainer(id);
  REQUIRE(r.outcome == Outcome::kOk);
  return r.container.attributes;
}

// The ids of the page of containers with attribute key:value.
std::set<std::string> ListedWith(store::Storage* s, const std::string& key,
                                 const std::string& value) {
  store::ContainerFilter filter;
  filter.attribute_key = key;
  filter.attribute_value = value;
  std::vector<store::ContainerInfo> page;
  std::string next;
  REQUIRE(s->ListContainers(filter, "", 100, &page, &next).ok());
  std::set<std::string> ids;
  for (const auto& c : page) ids.insert(c.id);
  return ids;
}

}  // namespace

TEST_CASE("attributes: registration stores them, and a re-registration without them keeps them, "
          "with them replaces them whole") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {Attributed("c1", "weur", R"({"chrome":"126","gpu":"a100"})"),
                             Attributed("c2", "weur", std::nullopt)});
  CHECK(AttributesOf(e.storage.get(), "c1") == R"({"chrome":"126","gpu":"a100"})");
  CHECK(AttributesOf(e.storage.get(), "c2") == "{}");
  // Absent: kept (and a selector still finds the container).
  Register(e.storage.get(), {Attributed("c1", "weur", std::nullopt, 5)});
  CHECK(AttributesOf(e.storage.get(), "c1") == R"({"chrome":"126","gpu":"a100"})");
  CHECK(ListedWith(e.storage.get(), "gpu", "a100") == std::set<std::string>{"c1"});
  // Given: replaced whole, the old keys gone from the selector's index too.
  Register(e.storage.get(), {Attributed("c1", "weur", R"({"gpu":"t4"})")});
  CHECK(AttributesOf(e.storage.get(), "c1") == R"({"gpu":"t4"})");
  CHECK(ListedWith(e.storage.get(), "gpu", "a100").empty());
  CHECK(ListedWith(e.storage.get(), "gpu", "t4") == std::set<std::string>{"c1"});
  CHECK(Name(ClaimSelected(e.storage.get(), {{"chrome", {"126"}}}).outcome) == "no_match");
  // {}: none.
  Register(e.storage.get(), {Attributed("c1", "weur", "{}")});
  CHECK(AttributesOf(e.storage.get(), "c1") == "{}");
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"t4"}}}).outcome) == "no_match");
}

TEST_CASE("attributes: a claim's selector takes only containers whose attributes match every "
          "key, an array meaning one of its values") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {Attributed("a100-126", "weur", R"({"chrome":"126","gpu":"a100"})"),
                             Attributed("a100-125", "weur", R"({"chrome":"125","gpu":"a100"})"),
                             Attributed("t4-126", "weur", R"({"chrome":"126","gpu":"t4"})"),
                             Attributed("bare", "weur", std::nullopt)});
  auto first = ClaimSelected(e.storage.get(), {{"chrome", {"126"}}, {"gpu", {"a100"}}});
  REQUIRE(first.outcome == Outcome::kOk);
  CHECK(first.session.container_id == "a100-126");
  // The only match is held: no_capacity (it exists), not no_match.
  CHECK(Name(ClaimSelected(e.storage.get(), {{"chrome", {"126"}}, {"gpu", {"a100"}}}).outcome) ==
        "no_capacity");
  auto either = ClaimSelected(e.storage.get(), {{"chrome", {"125", "126"}}, {"gpu", {"a100"}}});
  REQUIRE(either.outcome == Outcome::kOk);
  CHECK(either.session.container_id == "a100-125");
  auto t4 = ClaimSelected(e.storage.get(), {{"gpu", {"h100", "t4"}}});
  REQUIRE(t4.outcome == Outcome::kOk);
  CHECK(t4.session.container_id == "t4-126");
  // A key no container has, a value none has: nothing registered matches.
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"h100"}}}).outcome) == "no_match");
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}, {"zone", {"b"}}}).outcome) ==
        "no_match");
  // Without a selector, any container: the bare one is what is left.
  auto plain = ClaimSelected(e.storage.get(), {});
  REQUIRE(plain.outcome == Outcome::kOk);
  CHECK(plain.session.container_id == "bare");
}

TEST_CASE("attributes: among the matching containers a claim takes one of the K fittest") {
  store::ClaimPolicy policy;
  policy.candidates = 3;
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS, policy);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 12; ++i) {
    // Faster containers without the attribute, which a selector must pass over.
    specs.push_back(Attributed("m" + std::to_string(i), "weur", R"({"gpu":"a100"})", 100 + i));
    specs.push_back(Attributed("o" + std::to_string(i), "weur", R"({"gpu":"t4"})", i));
  }
  Register(e.storage.get(), specs);
  for (int claimed = 0; claimed < 6; ++claimed) {
    auto c = ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}});
    REQUIRE(c.outcome == Outcome::kOk);
    const std::string& id = c.session.container_id;
    REQUIRE(id[0] == 'm');
    // Of the matching ones left, one of the 3 fastest.
    CHECK(std::stoi(id.substr(1)) < claimed + 3);
  }
}

TEST_CASE("attributes: no_match is for a selector no container of the pool in any named region "
          "matches, whatever its state, and a fallback region's match is served") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {Attributed("w1", "weur", R"({"gpu":"t4"})"),
                             Attributed("n1", "wnam", R"({"gpu":"a100"})")});
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}}).outcome) == "no_match");
  auto served = ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}}, "weur", {"wnam"});
  REQUIRE(served.outcome == Outcome::kOk);
  CHECK(served.session.container_id == "n1");
  // Held in the fallback region: it exists there, so no_capacity.
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}}, "weur", {"wnam"}).outcome) ==
        "no_capacity");
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}}, "wnam", {"weur"}).outcome) ==
        "no_capacity");
  // Drained, it still exists; deleted, it does not.
  auto drained = Await<store::ContainerResult>([&](auto cb) { e->Drain("w1", cb); });
  REQUIRE(drained.outcome == Outcome::kOk);
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"t4"}}}).outcome) == "no_capacity");
  auto removed = Await<store::ContainerResult>([&](auto cb) { e->Remove("w1", cb); });
  REQUIRE(removed.outcome == Outcome::kOk);
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"t4"}}}).outcome) == "no_match");
  CHECK(ListedWith(e.storage.get(), "gpu", "t4").empty());
}

TEST_CASE("attributes: a container registered again in another pool is found by a selector "
          "there, no longer in its old one") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {Attributed("c1", "weur", R"({"gpu":"a100"})")});
  store::ContainerSpec moved = Attributed("c1", "weur", std::nullopt);
  moved.pool = "q";
  Register(e.storage.get(), {moved});
  CHECK(Name(ClaimSelected(e.storage.get(), {{"gpu", {"a100"}}}).outcome) == "no_match");
  store::ClaimRequest req = testing::Req("weur", "t1", "q");
  req.lease_ms = 60000;
  req.selector = {{"gpu", {"a100"}}};
  auto c = Await<store::SessionResult>([&](auto cb) { e->Claim(std::move(req), cb); });
  REQUIRE(c.outcome == Outcome::kOk);
  CHECK(c.session.container_id == "c1");
}

TEST_CASE("attributes: a container list filters by one attribute's value") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  Register(e.storage.get(), {Attributed("c1", "weur", R"({"chrome":"126","gpu":"a100"})"),
                             Attributed("c2", "wnam", R"({"gpu":"a100"})"),
                             Attributed("c3", "weur", R"({"gpu":"a1000"})"),
                             Attributed("c4", "weur", std::nullopt)});
  CHECK(ListedWith(e.storage.get(), "gpu", "a100") == std::set<std::string>{"c1", "c2"});
  CHECK(ListedWith(e.storage.get(), "chrome", "126") == std::set<std::string>{"c1"});
  CHECK(ListedWith(e.storage.get(), "chrome", "").empty());
  // Every list shows a container's attributes.
  std::vector<store::ContainerInfo> page;
  std::string next;
  REQUIRE(e->ListContainers({}, "", 100, &page, &next).ok());
  REQUIRE(page.size() == 4);
  CHECK(page[0].attributes == R"({"chrome":"126","gpu":"a100"})");
  CHECK(page[3].attributes == "{}");
}
