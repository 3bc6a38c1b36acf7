#include "server/api/container_routes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

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
