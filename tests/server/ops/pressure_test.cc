#include "server/ops/pressure.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/service_fixture.h"
#include "tests/support/engines.h"

namespace server {
namespace {

using fixture::Eventually;
using fixture::LiveService;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

constexpr std::chrono::seconds kPressurePatience(30);

// A live server on `engine` ("sqlite", "sqlite-sharded": 3 files, or
// "postgres"), its mirror refreshed every `refresh_ms`.
std::function<void(ServeConfig*)> ServeOn(const std::string& engine, int64_t refresh_ms,
                                     std::vector<std::string> warm_buffer = {}) {
  return [engine, refresh_ms, warm_buffer](ServeConfig* c) {
    if (engine == "postgres") c->db = testing::SharedPg().NewDatabaseUri();
    if (engine == "sqlite-sharded") c->shards = 3;
    c->mirror_refresh_ms = refresh_ms;
    c->warm_buffer = warm_buffer;
  };
}

// Registers `n` containers of `slots` slots, "<prefix>-0".., in weur/`pool`.
void RegisterSlotted(HttpClient& c, const std::string& prefix, const std::string& pool, int n,
              int slots) {
  json list = json::array();
  for (int i = 0; i < n; ++i) {
    list.push_back({{"id", prefix + "-" + std::to_string(i)}, {"region", "weur"}, {"pool", pool},
                    {"slots", slots}});
  }
  HttpReply r = c.Post("/v1/containers", json{{"containers", list}}.dump());
  INFO(r.body);
  REQUIRE(r.status == 200);
}

json ClaimIn(HttpClient& c, const std::string& pool) {
  HttpReply r = c.Post("/v1/sessions", json{{"region", "weur"}, {"pool", pool}}.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  return json::parse(r.body);
}

json GetBody(HttpClient& c, const std::string& target) {
  HttpReply r = c.Get(target);
  INFO(target << ": " << r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

// The body of a 200, else null: a pool is unknown until the mirror's next
// refresh reads it.
json MaybeBody(HttpClient& c, const std::string& target) {
  HttpReply r = c.Get(target);
  return r.status == 200 ? json::parse(r.body) : json();
}

// Waits until /v1/pressure knows weur/chrome: a pool is unknown (404) until
// the mirror's next refresh after its containers' registration reads it.
void AwaitChromeKnown(HttpClient& c) {
  REQUIRE(
      Eventually([&] { return MaybeBody(c, "/v1/pressure?region=weur&pool=chrome").is_object(); },
                 kPressurePatience));
}

// A live server on `engine`, its mirror refreshed every 50 ms, with `n`
// containers of `slots` slots in weur/chrome that /v1/pressure knows: where
// the cases of one known pool start.
std::unique_ptr<LiveService> KnownChromeOn(const std::string& engine, int n, int slots) {
  auto t = std::make_unique<LiveService>(ServeOn(engine, 50));
  HttpClient c = t->Client();
  RegisterSlotted(c, "c", "chrome", n, slots);
  AwaitChromeKnown(c);
  return t;
}

// The counts of weur/`pool` in a /v1/capacity body.
json CapacityPoolOf(const json& capacity, const std::string& pool) {
  return capacity.at(json::json_pointer("/regions/weur/pools/" + pool));
}

// The capacity counts a pressure body shows, by their /v1/capacity names.
json PressureCounts(const json& pressure) {
  json part;
  for (const char* name : {"available", "picked", "draining", "dead", "drained", "slots",
                           "slots_used", "slots_free"}) {
    part[name] = pressure.at(name);
  }
  return part;
}

TEST_CASE("pressure: a pool's slots, states and recommended buffer, on every engine") {
  const std::string engine = EDGEALLOC_ENGINES_AND_SHARDS;
  INFO(engine);
  // A count for every pool, a percentage for weur/chrome.
  LiveService t(ServeOn(engine, 50, {"3", "weur/chrome=75%"}));
  HttpClient c = t.Client();
  RegisterSlotted(c, "c", "chrome", 4, 4);  // 16 slots
  RegisterSlotted(c, "f", "firefox", 2, 1);
  for (int i = 0; i < 6; ++i) ClaimIn(c, "chrome");
  // The least used container is drained: a full one would stay picked
  // (placement is random among the fittest, so any may be full).
  std::string drained;
  int64_t on_drained = 5;
  for (int i = 0; i < 4; ++i) {
    const std::string id = "c-" + std::to_string(i);
    const int64_t used = GetBody(c, "/v1/containers/" + id)["slots_used"].get<int64_t>();
    if (used < on_drained) drained = id, on_drained = used;
  }
  REQUIRE(c.Post("/v1/containers/" + drained + "/drain", "").status == 200);
  json p;
  const bool seen = Eventually([&] {
    p = MaybeBody(c, "/v1/pressure?region=weur&pool=chrome");
    return p.is_object() && p["slots_used"] == 6 && p["draining"] == 1;
  }, kPressurePatience);
  INFO(p.dump());
  REQUIRE(seen);
  // Six sessions over c-0..c-3; one drained, its free slots not claimable:
  // the other three have 12 slots, 6 - on_drained of them used.
  CHECK(p["slots"] == 16);
  CHECK(p["available"].get<int64_t>() + p["picked"].get<int64_t>() == 3);
  CHECK(p["drained"] == 1);
  CHECK(p["dead"] == 0);
  CHECK(p["slots_free"] == 12 - (6 - on_drained));
  CHECK(p["waiting"] == 0);
  CHECK(p["heartbeat_lag_ms"].is_number_integer());
  CHECK(p["age_ms"].get<int64_t>() >= 0);
  CHECK(p["warm_buffer"] == "75%");
  // Free at least 75% of used + free: 3 x 6 = 18 free slots, 4 a container.
  CHECK(p["buffer_slots"] == 18);
  const int64_t missing = 18 - p["slots_free"].get<int64_t>();
  CHECK(p["recommended_buffer"] == (missing + 3) / 4);
  // Every count is /v1/capacity's of the same snapshot.
  json cap;
  REQUIRE(Eventually([&] {
    cap = GetBody(c, "/v1/capacity");
    p = GetBody(c, "/v1/pressure?region=weur&pool=chrome");
    return cap["version"] == p["version"];
  }, kPressurePatience));
  CHECK(PressureCounts(p) == CapacityPoolOf(cap, "chrome"));
  CHECK(cap["as_of_ms"] == p["as_of_ms"]);

  // firefox: 2 free of 2 single-slot containers, buffer 3: one to add.
  json f = GetBody(c, "/v1/pressure?region=weur&pool=firefox");
  CHECK(f["slots_free"] == 2);
  CHECK(f["warm_buffer"] == "3");
  CHECK(f["recommended_buffer"] == 1);
}

TEST_CASE("pressure: an unknown pool is 404 unknown_pool naming the region's pools") {
  const std::string engine = EDGEALLOC_ENGINES_AND_SHARDS;
  INFO(engine);
  const auto t = KnownChromeOn(engine, 1, 2);
  HttpClient c = t->Client();
  HttpReply r = c.Get("/v1/pressure?region=weur&pool=chorme");
  CHECK(r.status == 404);
  CHECK(r.ErrorCode() == "unknown_pool");
  CHECK_THAT(r.body, Catch::Contains("has pools chrome"));
  CHECK(c.Get("/v1/pressure?region=eeur&pool=chrome").ErrorCode() == "unknown_pool");
  // No pool named: the claims' default pool, unknown here.
  CHECK(c.Get("/v1/pressure?region=weur").ErrorCode() == "unknown_pool");
  r = c.Get("/v1/pressure?pool=chrome");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_request");
}

TEST_CASE("pressure: waiting counts the claims waiting for the pool, recommended_buffer adds them") {
  LiveService t(ServeOn("sqlite", 50, {"1"}));
  HttpClient c = t.Client();
  RegisterSlotted(c, "c", "chrome", 1, 2);
  ClaimIn(c, "chrome");
  ClaimIn(c, "chrome");
  AwaitChromeKnown(c);
  std::atomic<int> answered{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 2; ++i) {
    waiters.emplace_back([&t, &answered] {
      HttpClient w = t.Client();
      (void)w.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":20000})");
      answered.fetch_add(1);
    });
  }
  json p;
  const bool two = Eventually([&] {
    p = GetBody(c, "/v1/pressure?region=weur&pool=chrome");
    return p["waiting"] == 2 && p["slots_free"] == 0;
  }, kPressurePatience);
  INFO(p.dump());
  CHECK(two);
  // One slot of buffer and two waiters: three slots, two containers of 2.
  CHECK(p["recommended_buffer"] == 2);
  // Releasing serves a waiter: one waits.
  json sessions = GetBody(c, "/v1/sessions");
  REQUIRE(!sessions["sessions"].empty());
  const json& s = sessions["sessions"][0];
  REQUIRE(c.Delete("/v1/sessions/" + s["session_id"].get<std::string>() +
                   "?token=" + std::to_string(s["token"].get<int64_t>()))
              .status == 204);
  CHECK(Eventually([&] { return GetBody(c, "/v1/pressure?region=weur&pool=chrome")["waiting"] == 1; },
                   kPressurePatience));
  t.service->allocator()->EndWaits();
  for (auto& w : waiters) w.join();
  CHECK(answered == 2);
}

// Claims and releases on several threads while a reader alternates the two
// routes: every pair of bodies of one snapshot version shows the same
// counts, and the mirror's versions move on under the load.
TEST_CASE("pressure: no figure disagrees with /v1/capacity of the same snapshot, under load") {
  const std::string engine = EDGEALLOC_ENGINES_AND_SHARDS;
  INFO(engine);
  // A snapshot each 50 ms: often within one pair of requests, even sanitized.
  const auto t = KnownChromeOn(engine, 6, 3);
  HttpClient admin = t->Client();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> cycles{0};
  std::vector<std::thread> load;
  for (int i = 0; i < 3; ++i) {
    load.emplace_back([&t, &stop, &cycles] {
      HttpClient w = t->Client();
      while (!stop) {
        HttpReply r = w.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
        if (r.status != 201) continue;
        const json s = json::parse(r.body);
        (void)w.Delete("/v1/sessions/" + s["session_id"].get<std::string>() +
                       "?token=" + std::to_string(s["token"].get<int64_t>()));
        cycles.fetch_add(1);
      }
    });
  }
  // By version: the pool's counts each route showed, and their as_of_ms.
  std::map<uint64_t, json> capacity_of, pressure_of;
  // Versions both routes showed: a slow build (sanitizers) sees the
  // snapshot move between the two requests of a pair more often, so the
  // loop runs until enough versions were seen by both, not a pair count.
  std::set<uint64_t> both;
  int pairs = 0;
  const auto deadline = std::chrono::steady_clock::now() + kPressurePatience;
  while ((pairs < 200 || cycles < 200 || both.size() < 20) &&
         std::chrono::steady_clock::now() < deadline) {
    const json cap = GetBody(admin, "/v1/capacity");
    const json p = GetBody(admin, "/v1/pressure?region=weur&pool=chrome");
    const uint64_t cap_version = cap["version"].get<uint64_t>();
    const uint64_t p_version = p["version"].get<uint64_t>();
    capacity_of.emplace(cap_version,
                        json{{"counts", CapacityPoolOf(cap, "chrome")}, {"as_of_ms", cap["as_of_ms"]}});
    pressure_of.emplace(p_version, json{{"counts", PressureCounts(p)}, {"as_of_ms", p["as_of_ms"]}});
    if (pressure_of.count(cap_version)) both.insert(cap_version);
    if (capacity_of.count(p_version)) both.insert(p_version);
    ++pairs;
  }
  stop = true;
  for (auto& w : load) w.join();
  int compared = 0, disagreed = 0;
  for (const auto& [version, shown] : capacity_of) {
    auto other = pressure_of.find(version);
    if (other == pressure_of.end()) continue;
    ++compared;
    if (shown != other->second) {
      ++disagreed;
      UNSCOPED_INFO("version " << version << ": capacity " << shown << ", pressure "
                               << other->second);
    }
  }
  INFO(compared << " versions compared of " << capacity_of.size() << " and "
                << pressure_of.size() << " seen, " << cycles << " claim-release cycles");
  CHECK(disagreed == 0);
  CHECK(compared >= 20);  // the snapshots moved under the load, and both saw them
}

}  // namespace
}  // namespace server
