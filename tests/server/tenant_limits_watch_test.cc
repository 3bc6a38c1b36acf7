#include "server/tenant_limits_watch.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/support/forwarding_storage.h"

namespace {

// A database where the other nodes published `others`: a publish answers
// them and this node's own rows.
class FleetOf : public testing::ForwardingStorage {
 public:
  explicit FleetOf(std::vector<store::TenantLimitsDigest> others)
      : ForwardingStorage(nullptr), others_(std::move(others)) {}
  store::Status PublishTenantLimits(const std::string& node_id,
                                    const std::vector<store::TenantLimitsDigest>& mine,
                                    int64_t window_ms,
                                    std::vector<store::TenantLimitsDigest>* fleet) override {
    *fleet = others_;
    for (store::TenantLimitsDigest d : mine) {
      d.node_id = node_id;
      fleet->push_back(d);
    }
    return store::Status::Ok();
  }
  std::vector<store::TenantLimitsDigest> others_;
};

}  // namespace

TEST_CASE("tenant limits: the text is the quota the store shares, the tenant's or the default") {
  CHECK(server::TenantLimitsText({.max_sessions = 5}, store::kUnlimited) == "max_sessions=5");
  CHECK(server::TenantLimitsText(store::TenantLimits{}, 7) == "max_sessions=7");
  CHECK(server::TenantLimitsText(store::TenantLimits{}, store::kUnlimited) ==
        "max_sessions=unlimited");
  // Each node's own limits do not make a difference.
  store::TenantLimits per_node{.max_sessions = 5};
  per_node.claims_per_s = 20;
  per_node.max_waiters = 3;
  CHECK(server::TenantLimitsText(per_node, 7) == "max_sessions=5");
}

TEST_CASE("tenant limits: a tenant named by one node is compared with the others' defaults") {
  const std::vector<store::TenantLimitsDigest> fleet = {
      {"a", "", "max_sessions=unlimited"}, {"a", "acme", "max_sessions=5"},
      {"a", "bolt", "max_sessions=3"},     {"b", "", "max_sessions=unlimited"},
      {"b", "bolt", "max_sessions=3"},     {"c", "", "max_sessions=5"},
      {"c", "bolt", "max_sessions=3"}};
  const auto found = server::FindTenantLimitsMismatches(fleet);
  REQUIRE(found.size() == 1);
  CHECK(found[0].tenant == "acme");
  CHECK(found[0].digest_by_node.at("a") == "max_sessions=5");
  CHECK(found[0].digest_by_node.at("b") == "max_sessions=unlimited");
  CHECK(found[0].digest_by_node.at("c") == "max_sessions=5");
  // Alone, or all alike: nothing.
  CHECK(server::FindTenantLimitsMismatches({{"a", "acme", "max_sessions=5"}}).empty());
  CHECK(server::FindTenantLimitsMismatches(
            {{"a", "acme", "max_sessions=5"}, {"b", "acme", "max_sessions=5"}})
            .empty());
}

TEST_CASE("tenant limits: a mismatch is warned of once a period, names no key, and clears") {
  FleetOf db({{"other", "", "max_sessions=unlimited"}, {"other", "acme", "max_sessions=7"}});
  std::vector<std::string> warned;
  server::TenantLimitsWatch::Options options;
  options.node_id = "me";
  options.mine = {{"", "", "max_sessions=unlimited"}, {"", "acme", "max_sessions=5"}};
  options.warn_every_ms = 60000;
  options.warn = [&](const std::string& m) { warned.push_back(m); };
  server::TenantLimitsWatch watch(&db, options);
  CHECK_FALSE(watch.Mismatched("acme"));
  REQUIRE(watch.Check(1'000'000).ok());
  CHECK(watch.Mismatched("acme"));
  REQUIRE(warned.size() == 1);
  CHECK(warned[0].find("tenant acme") != std::string::npos);
  CHECK(warned[0].find("me: max_sessions=5") != std::string::npos);
  CHECK(warned[0].find("other: max_sessions=7") != std::string::npos);
  REQUIRE(watch.Check(1'030'000).ok());
  CHECK(warned.size() == 1);  // within the period
  REQUIRE(watch.Check(1'061'000).ok());
  CHECK(warned.size() == 2);
  db.others_[1].digest = "max_sessions=5";  // the other node's file fixed
  REQUIRE(watch.Check(1'062'000).ok());
  CHECK_FALSE(watch.Mismatched("acme"));
  CHECK(warned.size() == 2);
}
