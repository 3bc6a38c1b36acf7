#include "server/api/container_routes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "tests/server/service_fixture.h"

namespace server {
namespace {

using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;
using fixture::Eventually;
using fixture::LiveService;
using fixture::RegisterFleet;

json Body(const HttpReply& r) { return json::parse(r.body); }

// What a container's body says of its drains: "status" with
// " drain_requested" and " drain_reported" when true.
std::string DrainState(HttpClient& c, const std::string& id) {
  const json got = Body(c.Get("/v1/containers/" + id));
  return got["status"].get<std::string>() +
         (got["drain_requested"].get<bool>() ? " drain_requested" : "") +
         (got["drain_reported"].get<bool>() ? " drain_reported" : "");
}

void Report(HttpClient& c, const std::string& id, const std::string& state) {
  REQUIRE(c.Post("/v1/heartbeats", json{{"heartbeats", {{{"container_id", id}, {"state", state}}}}}
                                       .dump())
              .status == 202);
}

TEST_CASE("container routes: a drain holds against the container's ready, undrain ends it") {
  LiveService t([](ServeConfig* c) { c->batch_wait_ms = 5; });
  HttpClient c = t.Client();
  RegisterFleet(c, "d", 1);
  HttpReply r = c.Post("/v1/containers/d-0/drain", "");
  REQUIRE(r.status == 200);
  // The body of GET /v1/containers/{id}.
  CHECK(Body(r) == Body(c.Get("/v1/containers/d-0")));
  CHECK(DrainState(c, "d-0") == "draining drain_requested");
  Report(c, "d-0", "ready");
  // The heartbeat is written within its window; the drain is still there.
  CHECK_FALSE(Eventually([&] { return DrainState(c, "d-0") != "draining drain_requested"; },
                         std::chrono::milliseconds(300)));
  REQUIRE(c.Post("/v1/containers", R"({"containers":[{"id":"d-0","region":"weur","pool":"chrome"}]})")
              .status == 200);
  CHECK(DrainState(c, "d-0") == "draining drain_requested");
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").ErrorCode() ==
        "no_capacity");

  r = c.Post("/v1/containers/d-0/undrain", "");
  REQUIRE(r.status == 200);
  CHECK(Body(r)["id"] == "d-0");
  CHECK(Body(r)["status"] == "available");
  CHECK(Body(r)["drain_requested"] == false);
  CHECK(Body(r) == Body(c.Get("/v1/containers/d-0")));
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);

  r = c.Post("/v1/containers/nope/undrain", "");
  CHECK(r.status == 404);
  CHECK(r.ErrorCode() == "not_found");
}

TEST_CASE("container routes: a container's own draining shows apart from an operator's drain") {
  LiveService t([](ServeConfig* c) { c->batch_wait_ms = 5; });
  HttpClient c = t.Client();
  RegisterFleet(c, "s", 1);
  Report(c, "s-0", "draining");
  CHECK(Eventually([&] { return DrainState(c, "s-0") == "draining drain_reported"; }));
  // Not the operator's to end.
  CHECK(Body(c.Post("/v1/containers/s-0/undrain", ""))["status"] == "draining");
  Report(c, "s-0", "ready");
  CHECK(Eventually([&] { return DrainState(c, "s-0") == "available"; }));
  // The list shows the same fields.
  REQUIRE(c.Post("/v1/containers/s-0/drain", "").status == 200);
  const json list = Body(c.Get("/v1/containers"));
  REQUIRE(list["containers"].size() == 1);
  CHECK(list["containers"][0]["drain_requested"] == true);
  CHECK(list["containers"][0]["drain_reported"] == false);
}

TEST_CASE("container routes: undrain is an admin's, as drain is") {
  LiveService t({}, fixture::kKeys);
  HttpClient admin = t.Client("admin-key");
  RegisterFleet(admin, "k", 1);
  CHECK(t.Client("tenant-key").Post("/v1/containers/k-0/undrain", "").status == 403);
  CHECK(t.Client("container-key").Post("/v1/containers/k-0/undrain", "").status == 403);
  CHECK(t.Client().Post("/v1/containers/k-0/undrain", "").status == 401);
  CHECK(admin.Post("/v1/containers/k-0/undrain", "").status == 200);
}

}  // namespace
}  // namespace server

namespace server {
namespace {

constexpr char kAttributedFleet[] =
    R"({"containers":[)"
    R"({"id":"a100","region":"weur","pool":"chrome","attributes":{"gpu":"a100","chrome":"126"}},)"
    R"({"id":"t4","region":"weur","pool":"chrome","attributes":{"gpu":"t4"}},)"
    R"({"id":"bare","region":"weur","pool":"chrome"}]})";

}  // namespace

TEST_CASE("container routes: attributes are shown by GET and lists, filtered by ?attribute=, "
          "kept by a re-registration without them") {
  LiveService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kAttributedFleet).status == 200);
  CHECK(Body(c.Get("/v1/containers/a100"))["attributes"] == json{{"chrome", "126"}, {"gpu", "a100"}});
  CHECK(Body(c.Get("/v1/containers/bare"))["attributes"] == json::object());
  const json listed = Body(c.Get("/v1/containers?attribute=gpu:t4"));
  REQUIRE(listed["containers"].size() == 1);
  CHECK(listed["containers"][0]["id"] == "t4");
  CHECK(listed["containers"][0]["attributes"] == json{{"gpu", "t4"}});
  REQUIRE(c.Post("/v1/containers",
                 R"({"containers":[{"id":"t4","region":"weur","pool":"chrome","latency_ms":4}]})")
              .status == 200);
  CHECK(Body(c.Get("/v1/containers/t4"))["attributes"] == json{{"gpu", "t4"}});
  HttpReply two = c.Get("/v1/containers?attribute=gpu:t4&attribute=gpu:a100");
  CHECK(two.status == 400);
  CHECK(two.ErrorCode() == "invalid_field");
  HttpReply bad = c.Get("/v1/containers?attribute=gpu");
  CHECK(bad.status == 400);
  CHECK_THAT(bad.body, Catch::Contains("attribute: must be KEY:VALUE"));
}

TEST_CASE("container routes: bad attributes and selectors are 400 naming the field") {
  LiveService t;
  HttpClient c = t.Client();
  auto refused = [&](const std::string& path, const std::string& body) {
    HttpReply r = c.Post(path, body);
    INFO(body << " -> " << r.body);
    CHECK(r.status == 400);
    return Body(r)["error"]["message"].get<std::string>();
  };
  CHECK_THAT(refused("/v1/containers",
                     R"({"containers":[{"id":"x","region":"weur","attributes":{"gpu":1}}]})"),
             Catch::Contains("containers[0].attributes.gpu: must be a string"));
  CHECK_THAT(refused("/v1/containers",
                     R"({"containers":[{"id":"x","region":"weur","attributes":{"a:b":"c"}}]})"),
             Catch::Contains("containers[0].attributes: keys must not contain ':'"));
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  CHECK_THAT(refused("/v1/containers",
                     json{{"containers", {{{"id", "x"}, {"region", "weur"}, {"attributes", many}}}}}
                         .dump()),
             Catch::Contains("at most 16 attributes"));
  CHECK_THAT(refused("/v1/sessions", R"({"region":"weur","selector":{"gpu":[]}})"),
             Catch::Contains("selector.gpu: must hold at least one value"));
  CHECK_THAT(refused("/v1/sessions", R"({"region":"weur","selector":{"gpu":["a",2]}})"),
             Catch::Contains("selector.gpu[1]: must be a string"));
  CHECK_THAT(refused("/v1/sessions", R"({"region":"weur","selector":"gpu=a100"})"),
             Catch::Contains("selector: must be an object"));
  // A placement or a slot count out of its range is refused naming it.
  CHECK_THAT(refused("/v1/sessions", R"({"region":"weur","placement":"tight"})"),
             Catch::Contains("placement"));
  CHECK_THAT(refused("/v1/containers", R"({"containers":[{"id":"x","region":"weur","slots":0}]})"),
             Catch::Contains("slots"));
}

TEST_CASE("container routes: a claim's selector picks a matching container, and one matching "
          "nothing registered is 404 no_match at once, even with wait_ms") {
  LiveService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kAttributedFleet).status == 200);
  HttpReply got = c.Post("/v1/sessions",
                         R"({"region":"weur","pool":"chrome","selector":{"gpu":"a100",)"
                         R"("chrome":["125","126"]}})");
  INFO(got.body);
  REQUIRE(got.status == 201);
  CHECK(Body(got)["container_id"] == "a100");
  HttpReply taken = c.Post("/v1/sessions",
                           R"({"region":"weur","pool":"chrome","selector":{"gpu":"a100"}})");
  CHECK(taken.status == 503);
  CHECK(taken.ErrorCode() == "no_capacity");
  const auto t0 = std::chrono::steady_clock::now();
  HttpReply none = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":20000,)"
                                          R"("selector":{"gpu":"h100"}})");
  CHECK(none.status == 404);
  CHECK(none.ErrorCode() == "no_match");
  CHECK_THAT(none.body, Catch::Contains(R"(the selector {\"gpu\":[\"h100\"]})"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  // Even behind a claim already waiting for the pool, which has nothing
  // free: queued, it would wait out its 20 s, the pool being registered.
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","selector":{"gpu":"t4"}})")
              .status == 201);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  std::thread waiter([&] {
    HttpClient w = t.Client();
    w.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":4000,)"
                           R"("selector":{"gpu":"a100"}})");
  });
  CHECK(Eventually([&] { return fixture::MetricValue(c, "edgealloc_claim_waiters") == 1; }));
  const auto t1 = std::chrono::steady_clock::now();
  HttpReply behind = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":20000,)"
                                            R"("selector":{"gpu":"h100"}})");
  const auto behind_took = std::chrono::steady_clock::now() - t1;
  waiter.join();
  CHECK(behind.ErrorCode() == "no_match");
  CHECK(behind_took < std::chrono::seconds(3));
}

}  // namespace server
