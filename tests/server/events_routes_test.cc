// GET /v1/events and /v1/events/stream on a live server (docs/api.md,
// "Events"): pages after a cursor, a tenant's own events, a long poll woken
// by the commit it waits for, Server-Sent Events resumed by Last-Event-ID,
// 410 events_expired past the retention.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <chrono>
#include <future>
#include <string>

#include "tests/server/service_fixture.h"

namespace {

using nlohmann::json;
using server::fixture::LiveService;

std::string Claim(testing::HttpClient& c) {
  testing::HttpReply r =
      c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","lease_ms":60000})");
  REQUIRE(r.status == 201);
  return json::parse(r.body)["session_id"];
}

}  // namespace

TEST_CASE("events route: pages after a cursor, and a tenant sees its own sessions' events only") {
  LiveService live({}, server::fixture::kKeys);
  auto admin = live.Client("admin-key");
  auto tenant = live.Client("tenant-key");
  server::fixture::RegisterFleet(admin, "c", 2);
  const std::string mine = Claim(tenant);

  testing::HttpReply all = admin.Get("/v1/events?limit=2");
  REQUIRE(all.status == 200);
  json page = json::parse(all.body);
  REQUIRE(page["events"].size() == 2);
  CHECK(page["events"][0]["type"] == "container.registered");
  json rest = json::parse(admin.Get("/v1/events?after=" + page["next"].dump()).body);
  REQUIRE(rest["events"].size() == 1);
  CHECK(rest["events"][0]["type"] == "session.claimed");
  CHECK(rest["events"][0]["session_id"] == mine);
  CHECK(rest["events"][0]["tenant"] == "acme");

  json own = json::parse(tenant.Get("/v1/events").body);
  REQUIRE(own["events"].size() == 1);
  CHECK(own["events"][0]["session_id"] == mine);
  CHECK(admin.Get("/v1/events?type=session.nope").ErrorCode() == "invalid_field");
  CHECK(admin.Get("/v1/events?after=x").ErrorCode() == "invalid_field");
  CHECK(live.Client("container-key").Get("/v1/events").status == 403);
}

TEST_CASE("events route: a long poll answers at the commit it waits for, not at its end") {
  LiveService live({}, server::fixture::kKeys);
  auto admin = live.Client("admin-key");
  server::fixture::RegisterFleet(admin, "c", 1);
  const json first = json::parse(admin.Get("/v1/events").body);
  const std::string next = first["next"].dump();
  const auto t0 = std::chrono::steady_clock::now();
  auto waiting = std::async(std::launch::async, [&] {
    auto reader = live.Client("admin-key");
    reader.set_timeout(std::chrono::seconds(90));
    return reader.Get("/v1/events?wait_ms=60000&after=" + next);
  });
  // Not answered before the change (bounded: the claim is made either way).
  CHECK(waiting.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  Claim(admin);
  testing::HttpReply r = waiting.get();
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["events"][0]["type"] == "session.claimed");
  // Well before its 60 s: woken by the commit.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
}

TEST_CASE("events route: the stream is Server-Sent Events, resumed after Last-Event-ID") {
  LiveService live({}, server::fixture::kKeys);
  auto admin = live.Client("admin-key");
  server::fixture::RegisterFleet(admin, "c", 2);
  testing::HttpReply r = admin.Get("/v1/events/stream");
  REQUIRE(r.status == 200);
  CHECK(r.Header("content-type") == "text/event-stream");
  CHECK(r.body.rfind(": keep-alive\n", 0) == 0);
  const size_t id_at = r.body.find("id: ");
  REQUIRE(id_at != std::string::npos);
  const std::string first_id = r.body.substr(id_at + 4, r.body.find('\n', id_at) - id_at - 4);
  CHECK(r.body.find("event: container.registered\ndata: {") != std::string::npos);
  testing::HttpReply resumed = admin.Request("GET", "/v1/events/stream?wait_ms=0", "",
                                             {{"Last-Event-ID", first_id}});
  REQUIRE(resumed.status == 200);
  CHECK(resumed.body.find("\"c-0\"") == std::string::npos);
  CHECK(resumed.body.find("\"c-1\"") != std::string::npos);
}

TEST_CASE("events route: past the retention a cursor is 410 events_expired with the oldest seq") {
  LiveService live([](server::ServeConfig* c) { c->event_retention_ms = 0; },
                   server::fixture::kKeys);
  auto admin = live.Client("admin-key");
  server::fixture::RegisterFleet(admin, "c", 3);
  // The reaper prunes every 100 ms; wait (bounded) for the cursor to expire.
  testing::HttpReply r;
  for (int i = 0; i < 300; ++i) {
    r = admin.Get("/v1/events?after=0");
    if (r.status == 410) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(r.status == 410);
  CHECK(r.ErrorCode() == "events_expired");
  const json error = json::parse(r.body)["error"];
  CHECK(error["oldest_seq"].get<int64_t>() > 1);
  CHECK(admin.Get("/v1/events?after=" + error["resume_after"].dump()).status == 200);
}
