#include "server/api/heartbeat_budget.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "tests/server/service_fixture.h"

namespace server {
namespace {

using fixture::MetricValue;
using fixture::LiveService;
using fixture::RegisterFleet;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;
using Clock = HeartbeatKeyBudget::Clock;

// `n` items naming the ids of `ids` in turn, none with a state.
std::string Items(int n, const std::vector<std::string>& ids) {
  json items = json::array();
  for (int i = 0; i < n; ++i) items.push_back({{"container_id", ids[i % ids.size()]}});
  return json{{"heartbeats", items}}.dump();
}

TEST_CASE("heartbeat budget: a key's items refill at its rate, and a large request runs into debt") {
  HeartbeatKeyBudget budget(10);
  const Clock::time_point t0 = Clock::now();
  int64_t retry_after_s = 0;
  REQUIRE(budget.Admit("k", t0, &retry_after_s));
  budget.Charge("k", 25, t0);  // 10 held: 15 owed
  CHECK_FALSE(budget.Admit("k", t0, &retry_after_s));
  CHECK(retry_after_s == 2);  // 16 items at 10 a second
  CHECK(budget.Admit("other", t0, &retry_after_s));  // a key's own bucket
  CHECK_FALSE(budget.Admit("k", t0 + std::chrono::milliseconds(1500), &retry_after_s));
  CHECK(retry_after_s == 1);
  CHECK(budget.Admit("k", t0 + std::chrono::milliseconds(1700), &retry_after_s));
  // Never more than a second's worth held, however long the key was quiet.
  budget.Charge("k", 11, t0 + std::chrono::seconds(100));
  CHECK_FALSE(budget.Admit("k", t0 + std::chrono::seconds(100), &retry_after_s));
  CHECK(budget.refused_budget.load() == 3);

  HeartbeatKeyBudget none(0);
  none.Charge("k", 1000000, t0);
  CHECK(none.Admit("k", t0, &retry_after_s));
}

TEST_CASE("heartbeat budget: a key scoped to one id may send one report a request") {
  Principal exact;
  exact.role = Role::kContainer;
  exact.report_ids = "c-1";
  CHECK(ReportsCapOf(exact) == 1);
  Principal prefix = exact;
  prefix.report_ids = "c-*";
  CHECK(ReportsCapOf(prefix) == kMaxHeartbeatsPerRequest);
  CHECK(ReportsCapOf(Principal{}) == kMaxHeartbeatsPerRequest);  // admin
}

constexpr char kKeys[] =
    "adm admin\none container hb-0\nfleet container hb-*\nfleet2 container hb-*\n";

TEST_CASE("heartbeats: a key past its items a second is 429 on its headers, other keys are not") {
  LiveService t([](ServeConfig* c) { c->heartbeat_items_per_key_per_s = 100; }, kKeys);
  HttpClient admin = t.Client("adm");
  RegisterFleet(admin, "hb", 2);
  HttpClient fleet = t.Client("fleet");
  HttpReply first = fleet.Post("/v1/heartbeats", Items(1000, {"hb-0", "hb-1"}));
  REQUIRE(first.status == 202);
  CHECK(json::parse(first.body)["accepted"] == 1000);  // the items sent, folded or not
  // 900 items owed, 9 s at 100 a second: refused before the body is read,
  // so not even a bad one is looked at.
  HttpReply refused = fleet.Post("/v1/heartbeats", "not json");
  CHECK(refused.status == 429);
  CHECK(refused.ErrorCode() == "rate_limited");
  CHECK(std::stoi(refused.Header("retry-after")) >= 5);
  CHECK(fleet.Post("/v1/heartbeats", Items(1, {"hb-1"})).status == 429);
  // Another key of the same scope has its own budget.
  HttpClient fleet2 = t.Client("fleet2");
  CHECK(fleet2.Post("/v1/heartbeats", Items(10, {"hb-0", "hb-1"})).status == 202);
  CHECK(MetricValue(admin, "edgealloc_heartbeat_key_refusals_total{reason=\"budget\"}") == 2);
}

TEST_CASE("heartbeats: a container's reports fold at parse, and a one-id key sends one a request") {
  LiveService t({}, kKeys);
  HttpClient admin = t.Client("adm");
  RegisterFleet(admin, "hb", 2);
  HttpClient one = t.Client("one");
  HttpReply r = one.Post("/v1/heartbeats", Items(500, {"hb-0"}));
  REQUIRE(r.status == 202);
  CHECK(json::parse(r.body)["accepted"] == 500);
  CHECK(t.service->batcher()->stats().accepted.load() == 1);  // folded before the queue
  CHECK(MetricValue(admin, "edgealloc_heartbeats_folded_at_parse_total") == 499);
  // A state report starts a row of its own: two reports of the one container.
  HttpReply two = one.Post(
      "/v1/heartbeats",
      R"({"heartbeats":[{"container_id":"hb-0","state":"ready"},{"container_id":"hb-0"}]})");
  CHECK(two.status == 400);
  CHECK(two.ErrorCode() == "invalid_field");
  CHECK(two.body.find("at most 1 report a request") != std::string::npos);
  CHECK(t.service->batcher()->stats().accepted.load() == 1);  // nothing of it taken
  CHECK(MetricValue(admin, "edgealloc_heartbeat_key_refusals_total{reason=\"scope\"}") == 1);
  // A key of a prefix may send both.
  HttpClient fleet = t.Client("fleet");
  CHECK(fleet.Post("/v1/heartbeats",
                   R"({"heartbeats":[{"container_id":"hb-0","state":"ready"},)"
                   R"({"container_id":"hb-0"}]})")
            .status == 202);
}

}  // namespace
}  // namespace server
