#include "server/ops/ops_routes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "allocator/allocator_types.h"
#include "base/clock.h"
#include "server/ops/dashboard.h"
#include "store/storage.h"
#include "tests/server/service_fixture.h"

namespace server {
namespace {

using fixture::Eventually;
using fixture::LiveService;
using fixture::RegisterFleet;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

// The counts of one region and pool, or null if the body has none.
json PoolOf(const json& capacity, const std::string& region, const std::string& pool) {
  json::json_pointer at("/regions/" + region + "/pools/" + pool);
  return capacity.contains(at) ? capacity.at(at) : json();
}

// The JSON body of GET `target`, after checking that it is a 200 of JSON that
// caches may keep for `max_age` (the capacity routes' shared headers).
json CachedJson(HttpClient& c, const std::string& target, const std::string& max_age) {
  HttpReply r = c.Get(target);
  INFO(target << ": " << r.body);
  REQUIRE(r.status == 200);
  CHECK(r.Header("content-type") == "application/json");
  CHECK(r.Header("cache-control") == "max-age=" + max_age);
  return json::parse(r.body);
}

TEST_CASE("capacity: max-age is the refresh period in whole seconds rounded up and at least 1") {
  CHECK(OpsRoutes::CapacityMaxAgeSeconds(1) == 1);
  CHECK(OpsRoutes::CapacityMaxAgeSeconds(999) == 1);
  CHECK(OpsRoutes::CapacityMaxAgeSeconds(1000) == 1);
  CHECK(OpsRoutes::CapacityMaxAgeSeconds(1001) == 2);
  CHECK(OpsRoutes::CapacityMaxAgeSeconds(2500) == 3);
  CHECK(OpsRoutes::CapacityMaxAgeSeconds(60000) == 60);
}

TEST_CASE("capacity: the body has as_of_ms and age_ms and counts by region pool and state") {
  LiveService t([](ServeConfig* c) { c->mirror_refresh_ms = 2500; });
  HttpClient c = t.Client();
  RegisterFleet(c, "cap", 3);
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  const int64_t before = base::NowMs();
  json body = CachedJson(c, "/v1/capacity", "3");
  REQUIRE(body["as_of_ms"].is_number_integer());
  REQUIRE(body["age_ms"].is_number_integer());
  CHECK(body["as_of_ms"].get<int64_t>() <= before);
  CHECK(body["age_ms"].get<int64_t>() >= 0);
  CHECK(body["age_ms"].get<int64_t>() < 60000);
  CHECK(PoolOf(body, "weur", "chrome") ==
        json{{"available", 3}, {"picked", 0}, {"draining", 0}, {"dead", 0}, {"drained", 0},
             {"slots", 3}, {"slots_used", 0}, {"slots_free", 3}});
}

TEST_CASE("capacity: it answers from the mirror so a claim shows only after a refresh") {
  // A refresh period longer than the test: SQLite has the claim at once, the
  // mirror does not, and /v1/capacity must say what the mirror says.
  LiveService t([](ServeConfig* c) { c->mirror_refresh_ms = 600000; });
  HttpClient c = t.Client();
  RegisterFleet(c, "m", 2);
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  json body = json::parse(c.Get("/v1/capacity").body);
  CHECK(PoolOf(body, "weur", "chrome")["picked"] == 0);
  CHECK(c.Get("/v1/capacity").Header("cache-control") == "max-age=600");
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  body = json::parse(c.Get("/v1/capacity").body);
  CHECK(PoolOf(body, "weur", "chrome")["picked"] == 1);
  CHECK(PoolOf(body, "weur", "chrome")["available"] == 1);
}

// drained: the draining containers an operator drained; the others drain by
// their own report (draining - drained).
TEST_CASE("capacity: drained counts the operator's drains apart from the containers' own") {
  LiveService t([](ServeConfig* c) { c->batch_wait_ms = 5; });
  HttpClient c = t.Client();
  RegisterFleet(c, "dr", 4);
  REQUIRE(c.Post("/v1/containers/dr-0/drain", "").status == 200);
  REQUIRE(c.Post("/v1/heartbeats",
                 R"({"heartbeats":[{"container_id":"dr-1","state":"draining"}]})")
              .status == 202);
  const json want{{"available", 2}, {"picked", 0}, {"draining", 2}, {"dead", 0}, {"drained", 1},
                  {"slots", 4},     {"slots_used", 0}, {"slots_free", 2}};
  CHECK(Eventually([&] { return PoolOf(json::parse(c.Get("/v1/capacity").body), "weur", "chrome") == want; }));
}

TEST_CASE("capacity: it converges after a claim within a few refresh periods") {
  LiveService t([](ServeConfig* c) { c->mirror_refresh_ms = 50; });
  HttpClient c = t.Client();
  RegisterFleet(c, "v", 4);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  json last;
  CHECK(Eventually([&] {
    HttpReply r = c.Get("/v1/capacity");
    last = json::parse(r.body);
    return r.Header("cache-control") == "max-age=1" &&
           PoolOf(last, "weur", "chrome") ==
               json{{"available", 3}, {"picked", 1}, {"draining", 0}, {"dead", 0}, {"drained", 0},
                    {"slots", 4}, {"slots_used", 1}, {"slots_free", 3}};
  }));
  INFO(last.dump());
  CHECK(last["age_ms"].get<int64_t>() < 5000);
}

TEST_CASE("capacity history: samples of every pool a history interval apart, oldest first") {
  LiveService t([](ServeConfig* c) {
    c->mirror_refresh_ms = 600000;  // refreshed by the test alone
    c->history_interval_ms = 100;
  });
  HttpClient c = t.Client();
  RegisterFleet(c, "h", 3);
  // Each read in an interval of its own, so that each is a sample.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  json body = CachedJson(c, "/v1/capacity/history", "1");
  CHECK(body["interval_ms"] == 100);
  CHECK(body["pools_omitted"] == 0);
  // The first sample is Start()'s read of the empty pool, before the fleet.
  const json& times = body["as_of_ms"];
  REQUIRE(times.size() >= 2);
  for (size_t i = 1; i < times.size(); ++i) CHECK(times[i].get<int64_t>() > times[i - 1].get<int64_t>());
  const json& chrome = body["regions"]["weur"]["pools"]["chrome"];
  const size_t n = times.size();
  REQUIRE(chrome["available"].size() == n);
  CHECK(chrome["available"][n - 2] == 3);
  CHECK(chrome["picked"][n - 2] == 0);
  CHECK(chrome["available"][n - 1] == 2);
  CHECK(chrome["picked"][n - 1] == 1);
  // The slots beside them (a slot a container here): one taken by the claim.
  CHECK(chrome["slots"][n - 2] == 3);
  CHECK(chrome["slots_used"][n - 2] == 0);
  CHECK(chrome["slots_free"][n - 2] == 3);
  CHECK(chrome["slots_used"][n - 1] == 1);
  CHECK(chrome["slots_free"][n - 1] == 2);
}

// Every node publishes its claim counts to the database; any node's
// /v1/capacity/claims sums them: here this node and another one on the same
// file (one that claimed 10 and was refused 4 times in weur/chrome).
TEST_CASE("capacity claims: the sums of every node's published claim counts, and how many nodes") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "fl", 2);
  REQUIRE(t.service->mirror()->RefreshNow().ok());  // weur/chrome is a pool it counts
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  store::StorageOptions other_options;
  other_options.db = t.config.db;
  std::unique_ptr<store::Storage> other;
  REQUIRE(store::OpenStorage(other_options, &other).ok());
  REQUIRE(other->PublishClaimCounts("other", {{"", "", 10, 5}, {"weur", "chrome", 10, 4}},
                                    allocator::kFleetClaimWindowMs, 100)
              .ok());
  REQUIRE(t.service->allocator()->RefreshFleetClaims().ok());
  REQUIRE(t.service->allocator()->RefreshFleetClaims().ok());
  json body = CachedJson(c, "/v1/capacity/claims", "3");
  CHECK(body["nodes"] == 2);
  CHECK(body["window_ms"] == allocator::kFleetClaimWindowMs);
  CHECK(body["claims"] == json{{"ok", 11}, {"no_capacity", 5}});
  CHECK(body["pools"] ==
        json::array({{{"region", "weur"}, {"pool", "chrome"}, {"ok", 11}, {"no_capacity", 4}}}));
  CHECK(body["as_of_ms"].get<int64_t>() <= base::NowMs());
  CHECK(body["age_ms"].get<int64_t>() >= 0);
  // An earlier read of the sums, so that a rate can be had from one look.
  REQUIRE(body["earlier"].is_object());
  CHECK(body["earlier"]["as_of_ms"].get<int64_t>() <= body["as_of_ms"].get<int64_t>());
  CHECK(body["earlier"]["claims"]["ok"].get<int64_t>() <= 11);
  CHECK(body["earlier"]["pools"].is_array());
  other->StopWriters();
}

// The capacity routes' readers: tenant and admin keys (and a metrics key,
// where the keys file has one) read `path`, a container key is 403 and no
// key 401. One helper, so that each route's case says only which it is.
void CheckReaders(LiveService& t, const std::string& path, bool with_metrics_key) {
  INFO(path);
  CHECK(t.Client("tenant-key").Get(path).status == 200);
  CHECK(t.Client("admin-key").Get(path).status == 200);
  if (with_metrics_key) CHECK(t.Client("metrics-key").Get(path).status == 200);
  CHECK(t.Client("container-key").Get(path).status == 403);
  CHECK(t.Client().Get(path).status == 401);
}

TEST_CASE("capacity claims: tenant, admin and metrics keys may read them, container keys are 403") {
  LiveService t({}, std::string(fixture::kKeys) + "metrics-key metrics\n");
  REQUIRE(t.service->allocator()->RefreshFleetClaims().ok());
  CheckReaders(t, "/v1/capacity/claims", true);
}

TEST_CASE("capacity history: tenant and admin keys may read it and container keys are 403") {
  LiveService t({}, fixture::kKeys);
  CheckReaders(t, "/v1/capacity/history", false);
}

TEST_CASE("capacity: tenant and admin keys may read it and container keys are 403") {
  LiveService t({}, fixture::kKeys);
  CheckReaders(t, "/v1/capacity", false);
  HttpReply r = t.Client().Post("/v1/capacity", "{}");
  CHECK(r.status == 405);
  CHECK(r.Header("allow") == "GET, HEAD");
}

TEST_CASE("dashboard: the embedded page is served as text/html without a key") {
  LiveService t({}, fixture::kKeys);
  HttpReply r = t.Client().Get("/dashboard");
  REQUIRE(r.status == 200);
  CHECK(r.Header("content-type") == "text/html; charset=utf-8");
  // The page holds a bearer key once typed in: only its own script and
  // style run, by a nonce fresh in every response; no framing, no referrer.
  const std::string csp = r.Header("content-security-policy");
  const std::string marker = "script-src 'nonce-";
  REQUIRE(csp.find(marker) != std::string::npos);
  const size_t at = csp.find(marker) + marker.size();
  const std::string nonce = csp.substr(at, csp.find('\'', at) - at);
  CHECK(nonce.size() == 32);
  CHECK_THAT(csp, Catch::Contains("default-src 'none'"));
  CHECK_THAT(csp, Catch::Contains("style-src 'nonce-" + nonce + "'"));
  CHECK_THAT(csp, Catch::Contains("frame-ancestors 'none'"));
  CHECK(r.Header("x-frame-options") == "DENY");
  CHECK(r.Header("referrer-policy") == "no-referrer");
  CHECK(r.Header("x-content-type-options") == "nosniff");
  CHECK(r.body == DashboardPage(nonce));
  CHECK(r.body.find("<script nonce=\"" + nonce + "\">") != std::string::npos);
  CHECK(r.body.find("<style nonce=\"" + nonce + "\">") != std::string::npos);
  // No inline style attribute, which the policy would block.
  CHECK(r.body.find(" style=\"") == std::string::npos);
  CHECK(t.Client().Get("/dashboard").Header("content-security-policy") != csp);
  CHECK(r.body.find("data-status") != std::string::npos);
  CHECK(t.Client().Get("/metrics").status == 200);
}

TEST_CASE("dashboard: GET / sends a browser to the dashboard, without a key") {
  LiveService t({}, fixture::kKeys);
  HttpReply r = t.Client().Get("/");
  CHECK(r.status == 302);
  CHECK(r.Header("location") == "/dashboard");
}

}  // namespace
}  // namespace server
