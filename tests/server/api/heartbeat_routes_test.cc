#include "server/api/heartbeat_routes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/clock.h"
#include "server/demo.h"
#include "tests/server/service_fixture.h"
#include "tests/server/storage_double.h"

namespace server {
namespace {

using batcher::Heartbeat;
using fixture::Eventually;
using fixture::LiveService;
using fixture::RegisterFleet;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

TEST_CASE("heartbeats: a POST is answered 202 and written within the batch window") {
  LiveService t([](ServeConfig* c) { c->batch_wait_ms = 20; });
  HttpClient c = t.Client();
  RegisterFleet(c, "hb", 4);
  const int64_t before = base::NowMs();
  json items = json::array();
  for (int i = 0; i < 4; ++i) {
    items.push_back({{"container_id", "hb-" + std::to_string(i)}, {"ts_ms", before}, {"load", 0.5}});
  }
  items.push_back({{"container_id", "hb-3"}, {"state", "draining"}});
  HttpReply r = c.Post("/v1/heartbeats", json{{"heartbeats", items}}.dump());
  REQUIRE(r.status == 202);
  CHECK(r.Header("content-type") == "application/json");
  CHECK(json::parse(r.body) == json{{"accepted", 5}, {"drain", json::array()}, {"unknown", json::array()}});

  // Well within a second on any machine; the window itself is 20 ms.
  CHECK(Eventually([&] {
    json got = json::parse(c.Get("/v1/containers/hb-3").body);
    return got["status"] == "draining" && got["last_heartbeat_ms"].get<int64_t>() >= before;
  }, std::chrono::seconds(3)));
  for (int i = 0; i < 3; ++i) {
    json got = json::parse(c.Get("/v1/containers/hb-" + std::to_string(i)).body);
    CHECK(got["status"] == "available");
    CHECK(got["last_heartbeat_ms"].get<int64_t>() >= before);
  }
  CHECK(t.service->batcher()->stats().accepted.load() == 5);
}

// The reply names the reported containers an operator drained, as of the
// capacity mirror's latest refresh: in request order, each once.
TEST_CASE("heartbeats: the reply names the reported containers an operator drained") {
  const int shards = GENERATE(1, 2);  // 2: the reply is made on a reader thread
  LiveService t([shards](ServeConfig* c) {
    c->mirror_refresh_ms = 3600000;  // refreshed by the test alone
    c->shards = shards;
  });
  HttpClient c = t.Client();
  RegisterFleet(c, "hb", 3);
  const std::string body =
      R"({"heartbeats":[{"container_id":"hb-2"},{"container_id":"hb-1","state":"ready"},)"
      R"({"container_id":"hb-0"},{"container_id":"hb-1"},{"container_id":"hb-2"}]})";
  REQUIRE(c.Post("/v1/containers/hb-1/drain", "").status == 200);
  REQUIRE(c.Post("/v1/containers/hb-2/drain", "").status == 200);
  // Not yet: the mirror has not read the drains (the lag is one refresh).
  HttpReply r = c.Post("/v1/heartbeats", body);
  REQUIRE(r.status == 202);
  CHECK(json::parse(r.body) == json{{"accepted", 5}, {"drain", json::array()}, {"unknown", json::array()}});
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  r = c.Post("/v1/heartbeats", body);
  REQUIRE(r.status == 202);
  CHECK(json::parse(r.body) == json{{"accepted", 5}, {"drain", {"hb-2", "hb-1"}}, {"unknown", json::array()}});
  // Only the reported ones are named.
  r = c.Post("/v1/heartbeats", R"({"heartbeats":[{"container_id":"hb-0"}]})");
  CHECK(json::parse(r.body) == json{{"accepted", 1}, {"drain", json::array()}, {"unknown", json::array()}});
  // Undrained: named no more after the next refresh.
  REQUIRE(c.Post("/v1/containers/hb-2/undrain", "").status == 200);
  REQUIRE(t.service->mirror()->RefreshNow().ok());
  r = c.Post("/v1/heartbeats", body);
  CHECK(json::parse(r.body) == json{{"accepted", 5}, {"drain", {"hb-1"}}, {"unknown", json::array()}});
}

// The reply comes before the write: an id the node finds unknown only by
// writing it is named from its next request on, until a write of it finds
// it; with shards every id is looked up at acceptance, so from the first.
TEST_CASE("heartbeats: the reply names the reported ids that have no container") {
  const int shards = GENERATE(1, 2);
  LiveService t([shards](ServeConfig* c) { c->shards = shards; });
  HttpClient c = t.Client();
  RegisterFleet(c, "hb", 1);
  const batcher::BatcherStats& stats = t.service->batcher()->stats();
  // Posts, and waits until the batcher has written (or dropped) all it took.
  const auto post = [&] {
    HttpReply r = c.Post("/v1/heartbeats",
                         R"({"heartbeats":[{"container_id":"ghost"},{"container_id":"hb-0"},)"
                         R"({"container_id":"ghost","state":"ready"}]})");
    REQUIRE(r.status == 202);
    REQUIRE(Eventually([&] {
      return stats.written.load() + stats.coalesced.load() + stats.unknown.load() >=
             stats.accepted.load();
    }));
    return json::parse(r.body);
  };
  const json none = json::array();
  const json ghost = json::array({"ghost"});
  CHECK(post() == json{{"accepted", 3}, {"drain", none}, {"unknown", shards == 1 ? none : ghost}});
  CHECK(post() == json{{"accepted", 3}, {"drain", none}, {"unknown", ghost}});
  REQUIRE(c.Post("/v1/containers",
                 R"({"containers":[{"id":"ghost","region":"weur","pool":"chrome"}]})")
              .status == 200);
  CHECK(post()["unknown"] == (shards == 1 ? ghost : none));
  CHECK(post() == json{{"accepted", 3}, {"drain", none}, {"unknown", none}});
}

TEST_CASE("heartbeats: an invalid item is a 400 naming its index and nothing is taken") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "hb", 2);
  HttpReply r = c.Post("/v1/heartbeats",
                       R"({"heartbeats":[{"container_id":"hb-0"},{"container_id":"hb-1","state":"x"}]})");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_field");
  CHECK(json::parse(r.body)["error"]["message"].get<std::string>().rfind("heartbeats[1].state", 0) ==
        0);
  r = c.Post("/v1/heartbeats", "[1,2]");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_json");
  CHECK(t.service->batcher()->stats().accepted.load() == 0);
}

TEST_CASE("heartbeats: container and admin keys may post and tenant keys are 403 and none is 401") {
  LiveService t({}, fixture::kKeys);
  const std::string body = R"({"heartbeats":[{"container_id":"nobody"}]})";
  CHECK(t.Client("container-key").Post("/v1/heartbeats", body).status == 202);
  CHECK(t.Client("admin-key").Post("/v1/heartbeats", body).status == 202);
  HttpReply r = t.Client("tenant-key").Post("/v1/heartbeats", body);
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "forbidden");
  r = t.Client().Post("/v1/heartbeats", body);
  CHECK(r.status == 401);
  CHECK(r.ErrorCode() == "unauthorized");
  r = t.Client("wrong-key").Post("/v1/heartbeats", body);
  CHECK(r.status == 401);
}

TEST_CASE("heartbeats: a full queue is 503 overloaded with Retry-After and nothing of it is taken") {
  // A long window keeps what was accepted queued, so the queue stays full.
  LiveService t([](ServeConfig* c) {
    c->queue_capacity = 4;
    c->batch_wait_ms = 60000;
  });
  HttpClient c = t.Client();
  auto beats = [](int n) {
    json items = json::array();
    for (int i = 0; i < n; ++i) items.push_back({{"container_id", "q-" + std::to_string(i)}});
    return json{{"heartbeats", items}}.dump();
  };
  HttpReply r = c.Post("/v1/heartbeats", beats(3));
  REQUIRE(r.status == 202);
  r = c.Post("/v1/heartbeats", beats(2));
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "overloaded");
  CHECK(r.Header("retry-after") == "1");
  // One that fits is still taken: nothing of the refused one was.
  CHECK(c.Post("/v1/heartbeats", beats(1)).status == 202);
  // A request larger than the whole queue can never fit.
  r = c.Post("/v1/heartbeats", beats(5));
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "overloaded");
  const batcher::BatcherStats& s = t.service->batcher()->stats();
  CHECK(s.accepted.load() == 4);
  CHECK(s.refused.load() == 7);
  CHECK(t.service->batcher()->QueueDepth() == 4);
  std::string metrics = c.Get("/metrics").body;
  CHECK(metrics.find("edgealloc_heartbeats_refused_total{reason=\"overloaded\"} 7\n") !=
        std::string::npos);
  CHECK(metrics.find("edgealloc_heartbeat_queue_depth 4\n") != std::string::npos);
}

TEST_CASE("heartbeats: everything answered 202 is in the database after Stop") {
  // The window is far longer than the test: the items are still queued when
  // Stop begins, and only its drain can write them.
  LiveService t([](ServeConfig* c) { c->batch_wait_ms = 60000; });
  constexpr int kContainers = 20;
  {
    HttpClient c = t.Client();
    RegisterFleet(c, "d", kContainers);
    for (int i = 0; i < kContainers; ++i) {
      json item = {{"container_id", "d-" + std::to_string(i)}, {"state", "draining"}};
      REQUIRE(c.Post("/v1/heartbeats", json{{"heartbeats", {item}}}.dump()).status == 202);
    }
  }
  CHECK(t.service->batcher()->stats().written.load() == 0);
  t.service->Stop();
  t.Restart();
  HttpClient c = t.Client();
  for (int i = 0; i < kContainers; ++i) {
    json got = json::parse(c.Get("/v1/containers/d-" + std::to_string(i)).body);
    INFO(got.dump());
    CHECK(got["status"] == "draining");
  }
}

TEST_CASE("heartbeats: a server that is not ready answers 503 without touching the batcher") {
  KeyStore keys;
  Router router(&keys);
  std::atomic<bool> ready{false};
  // Not ready, the route must answer before it ever looks at the batcher.
  HeartbeatRoutes api(nullptr, &ready);
  api.AddRoutes(&router);
  Request req{http::verb::post, "/v1/heartbeats", 11};
  req.body() = R"({"heartbeats":[{"container_id":"c"}]})";
  req.set(http::field::content_type, "application/json");
  Response got;
  router.Handle(req, [&got](Response res) { got = std::move(res); });
  CHECK(got.result_int() == 503);
  CHECK(got[http::field::retry_after] == "1");
  CHECK(got.body().find("\"unavailable\"") != std::string::npos);
}

TEST_CASE("heartbeats: the demo fleet stays alive through the batcher alone") {
  // dead_after 1.5 s: the demo beats every 500 ms; a fleet kept alive only
  // by its registration would be dead after 1.5 s.
  LiveService t([](ServeConfig* c) {
    c->demo = true;
    c->dead_after_ms = 1500;
  });
  HttpClient c = t.Client();
  const int64_t fleet = static_cast<int64_t>(Demo::Fleet().size());
  CHECK(Eventually([&] {
    return t.service->batcher()->stats().written.load() >= static_cast<uint64_t>(2 * fleet);
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  json cap = json::parse(c.Get("/v1/capacity").body);
  int64_t available = 0, dead = 0;
  for (auto& [region, r] : cap["regions"].items()) {
    for (auto& [pool, p] : r["pools"].items()) {
      available += p["available"].get<int64_t>();
      dead += p["dead"].get<int64_t>();
    }
  }
  CHECK(available == fleet);
  CHECK(dead == 0);
}

TEST_CASE("heartbeats: a scoped container key naming any id outside its pattern is 403 whole") {
  LiveService t({}, "admin-key admin\n"
                    "k9 container weur-1*\n"
                    "k10 container eeur-7\n"
                    "box-key container\n");
  auto beats = [](std::initializer_list<const char*> ids) {
    json items = json::array();
    for (const char* id : ids) items.push_back({{"container_id", id}, {"state", "dead"}});
    return json{{"heartbeats", items}}.dump();
  };
  CHECK(t.Client("k9").Post("/v1/heartbeats", beats({"weur-1", "weur-12", "weur-1x"})).status ==
        202);
  // One id out of the pattern refuses the whole request: nothing is queued.
  HttpReply r = t.Client("k9").Post("/v1/heartbeats", beats({"weur-10", "weur-2", "weur-11"}));
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "forbidden");
  CHECK(json::parse(r.body)["error"]["message"].get<std::string>().rfind(
            "heartbeats[1].container_id", 0) == 0);
  CHECK(t.Client("k9").Post("/v1/heartbeats", beats({"eeur-1"})).status == 403);
  CHECK(t.Client("k9").Post("/v1/heartbeats", beats({"weur-"})).status == 403);
  // An exact id is that id only.
  CHECK(t.Client("k10").Post("/v1/heartbeats", beats({"eeur-7"})).status == 202);
  CHECK(t.Client("k10").Post("/v1/heartbeats", beats({"eeur-70"})).status == 403);
  CHECK(t.Client("k10").Post("/v1/heartbeats", beats({"eeur-"})).status == 403);
  // Unscoped container keys and admin keys report any id, as before.
  CHECK(t.Client("box-key").Post("/v1/heartbeats", beats({"eeur-70", "x"})).status == 202);
  CHECK(t.Client("admin-key").Post("/v1/heartbeats", beats({"eeur-70"})).status == 202);
  CHECK(t.service->batcher()->stats().accepted.load() == 3 + 1 + 2 + 1);
}

TEST_CASE("heartbeats: a ts_ms more than the allowed clock skew ahead is 400 naming its index") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "sk", 1);
  const int64_t now = base::NowMs();
  json items = json::array();
  items.push_back({{"container_id", "sk-0"}, {"ts_ms", now}});
  items.push_back({{"container_id", "sk-0"}, {"ts_ms", INT64_MAX}, {"state", "ready"}});
  HttpReply r = c.Post("/v1/heartbeats", json{{"heartbeats", items}}.dump());
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_field");
  CHECK(json::parse(r.body)["error"]["message"].get<std::string>().rfind("heartbeats[1].ts_ms", 0) ==
        0);
  // The default skew is 60 s: 30 s ahead is a clock a little fast, taken.
  items[1]["ts_ms"] = now + 30000;
  CHECK(c.Post("/v1/heartbeats", json{{"heartbeats", items}}.dump()).status == 202);
  items[1]["ts_ms"] = base::NowMs() + 120000;
  CHECK(c.Post("/v1/heartbeats", json{{"heartbeats", items}}.dump()).status == 400);
  CHECK(t.service->batcher()->stats().accepted.load() == 2);
}

TEST_CASE("heartbeats: a registration resets the report order, so a far-future ts_ms stops freezing") {
  // A far-future ts_ms taken by an older binary (or sent straight to the
  // batcher, as here) makes every later report "older". Registering the
  // container again must clear it.
  LiveService t([](ServeConfig* c) { c->batch_wait_ms = 5; });
  HttpClient c = t.Client();
  RegisterFleet(c, "fz", 1);
  auto written = [&] { return t.service->batcher()->stats().written.load(); };
  batcher::Heartbeat far;
  far.container_id = "fz-0";
  far.ts_ms = INT64_MAX;
  far.state = Heartbeat::State::kReady;
  far.accepted_ms = base::NowMs();
  std::vector<Heartbeat> one{far};
  REQUIRE(t.service->batcher()->Submit(std::move(one)).code ==
          batcher::SubmitResult::Code::kAccepted);
  REQUIRE(Eventually([&] { return written() >= 1; }));
  auto drain = [&] {
    json item = {{"container_id", "fz-0"}, {"ts_ms", base::NowMs()}, {"state", "draining"}};
    REQUIRE(c.Post("/v1/heartbeats", json{{"heartbeats", {item}}}.dump()).status == 202);
  };
  auto status = [&] { return json::parse(c.Get("/v1/containers/fz-0").body)["status"]; };
  drain();
  REQUIRE(Eventually([&] { return written() >= 2; }));
  CHECK(status() == "available");  // frozen: the draining report was "older"
  RegisterFleet(c, "fz", 1);
  drain();
  CHECK(Eventually([&] { return status() == "draining"; }, std::chrono::seconds(3)));
}

TEST_CASE("heartbeats: the server takes its clock skew bound from --max-clock-skew-ms") {
  LiveService t([](ServeConfig* c) { c->max_clock_skew_ms = 3600000; });
  HttpClient c = t.Client();
  json item = {{"container_id", "x"}, {"ts_ms", base::NowMs() + 1800000}};
  CHECK(c.Post("/v1/heartbeats", json{{"heartbeats", {item}}}.dump()).status == 202);
  item["ts_ms"] = base::NowMs() + 7200000;
  CHECK(c.Post("/v1/heartbeats", json{{"heartbeats", {item}}}.dump()).status == 400);
}

TEST_CASE("heartbeats: a node whose writers cannot reach the database answers 503, taking none") {
  // Else it would answer 202 while the other nodes' sweeps mark those
  // containers dead: refused, the agent sends them to another node.
  fixture::StorageDouble* storage = nullptr;
  LiveService t({}, "", [&storage](std::unique_ptr<store::Storage> real) {
    auto d = std::make_unique<fixture::StorageDouble>(std::move(real));
    storage = d.get();
    return std::unique_ptr<store::Storage>(std::move(d));
  });
  HttpClient c = t.Client();
  RegisterFleet(c, "hb", 1);
  const std::string body = R"({"heartbeats":[{"container_id":"hb-0"}]})";
  storage->SetFailing(0, true);
  HttpReply r = c.Post("/v1/heartbeats", body);
  CHECK(r.status == 503);  // before the fix: 202
  CHECK(r.ErrorCode() == "unavailable");
  CHECK(r.Header("retry-after") == "1");
  CHECK(json::parse(r.body)["error"]["message"].get<std::string>().find("another node") !=
        std::string::npos);
  CHECK(t.service->batcher()->stats().accepted.load() == 0);
  storage->SetFailing(0, false);
  CHECK(c.Post("/v1/heartbeats", body).status == 202);
  CHECK(t.service->batcher()->stats().accepted.load() == 1);
}

// On PostgreSQL the clock that counts is the database's: a node whose own
// clock is off bounds ts_ms by the database's now (its clock plus the
// offset its writers measured), so it neither refuses an honest container
// nor takes one far ahead of the fleet's clock.
TEST_CASE("heartbeats: the ts_ms bound is on the database's clock, by the measured offset") {
  fixture::StorageDouble* storage = nullptr;
  LiveService t([](ServeConfig* c) { c->max_clock_skew_ms = 60000; }, "",
                [&storage](std::unique_ptr<store::Storage> real) {
                  auto d = std::make_unique<fixture::StorageDouble>(std::move(real));
                  storage = d.get();
                  return std::unique_ptr<store::Storage>(std::move(d));
                });
  HttpClient c = t.Client();
  auto post = [&](int64_t ts_ms) {
    json item = {{"container_id", "x"}, {"ts_ms", ts_ms}};
    return c.Post("/v1/heartbeats", json{{"heartbeats", {item}}}.dump()).status;
  };
  // The database's clock 90 s behind this node's.
  storage->SetClockOffset(-90000);
  CHECK(post(base::NowMs() + 30000) == 400);  // 120 s ahead of the database: before the fix, 202
  CHECK(post(base::NowMs() - 60000) == 202);  // 30 s ahead of it
  // 90 s ahead of this node's.
  storage->SetClockOffset(90000);
  CHECK(post(base::NowMs() + 120000) == 202);  // 30 s ahead of the database: before the fix, 400
  CHECK(post(base::NowMs() + 160000) == 400);  // 70 s ahead of it
}

}  // namespace
}  // namespace server
