#include "server/api/json_body.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/server/service_fixture.h"

namespace server {
namespace {

using fixture::LiveService;
using fixture::RegisterFleet;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

std::string Message(const HttpReply& r) {
  return json::parse(r.body)["error"]["message"].get<std::string>();
}

// A 400 invalid_request whose message starts `unknown field "<field>"` and
// goes on with `rest` (the nearest known field, or the known ones).
void CheckUnknown(const HttpReply& r, const std::string& field, const std::string& rest) {
  INFO(r.status << " " << r.body);
  REQUIRE(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_request");
  CHECK(Message(r) == "unknown field \"" + field + "\"" + rest);
}

std::string ContainerStatus(HttpClient& c, const std::string& id) {
  return json::parse(c.Get("/v1/containers/" + id).body)["status"].get<std::string>();
}

// Issue: a body field the server does not know was ignored, so a claim
// asking for a feature of a newer server ("selector") got a container that
// did not match it, and a mistyped "lease_msec" the default lease.
TEST_CASE("unknown fields: POST /v1/sessions refuses them and claims nothing") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "u", 1);
  CheckUnknown(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","lease_msec":5000})"),
               "lease_msec", "; did you mean \"lease_ms\"?");
  CheckUnknown(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","selectr":{}})"),
               "selectr", "; did you mean \"selector\"?");
  CheckUnknown(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","placment":"packed"})"),
               "placment", "; did you mean \"placement\"?");
  CheckUnknown(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","shard":1})"), "shard",
               "; known fields: region, pool, lease_ms, idempotency_key, fallback_regions, "
               "wait_ms, labels, placement, selector");
  CheckUnknown(c.Post("/v1/sessions", R"({"regoin":"weur"})"), "regoin",
               "; did you mean \"region\"?");
  CHECK(ContainerStatus(c, "u-0") == "available");
  // Labels stay a free-form map.
  HttpReply ok =
      c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","labels":{"selector":"x"}})");
  CHECK(ok.status == 201);
  CHECK(ContainerStatus(c, "u-0") == "picked");
}

TEST_CASE("unknown fields: renew and release refuse them and change nothing") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "u", 1);
  const json s = json::parse(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").body);
  const std::string path = "/v1/sessions/" + s["session_id"].get<std::string>();
  const std::string token = std::to_string(s["token"].get<int64_t>());
  const int64_t expires = s["lease_expires_at_ms"].get<int64_t>();
  CheckUnknown(c.Post(path + "/renew", R"({"token":)" + token + R"(,"forever":true})"), "forever",
               "; known fields: token, lease_ms, shorten");
  CheckUnknown(c.Post(path + "/renew", R"({"token":)" + token + R"(,"leese_ms":600000})"),
               "leese_ms", "; did you mean \"lease_ms\"?");
  CHECK(json::parse(c.Get(path).body)["lease_expires_at_ms"].get<int64_t>() == expires);
  // Release takes its token in the query and no body fields.
  CheckUnknown(c.Request("DELETE", path + "?token=" + token, R"({"reason":"done"})"), "reason",
               "; this request takes no fields");
  CHECK(c.Get(path).status == 200);
  CHECK(c.Request("DELETE", path + "?token=" + token, "{}").status == 204);
}

TEST_CASE("unknown fields: POST /v1/containers refuses them in the body and in each container") {
  LiveService t;
  HttpClient c = t.Client();
  CheckUnknown(
      c.Post("/v1/containers", R"({"containers":[{"id":"a","region":"weur"}],"dry_run":1})"),
      "dry_run", "; known fields: containers");
  CheckUnknown(
      c.Post("/v1/containers",
             R"({"containers":[{"id":"a","region":"weur"},{"id":"b","region":"weur","slot":4}]})"),
      "containers[1].slot", "; did you mean \"slots\"?");
  CheckUnknown(c.Post("/v1/containers",
                      R"({"containers":[{"id":"a","region":"weur","atributes":{"gpu":"a100"}}]})"),
               "containers[0].atributes", "; did you mean \"attributes\"?");
  CheckUnknown(c.Post("/v1/containers",
                      R"({"containers":[{"id":"a","region":"weur","owner":"x"}]})"),
               "containers[0].owner",
               "; known fields: id, region, pool, latency_ms, data, slots, attributes");
  CheckUnknown(
      c.Post("/v1/containers", R"({"containers":[{"id":"a","region":"weur","latncy_ms":3}]})"),
      "containers[0].latncy_ms", "; did you mean \"latency_ms\"?");
  CHECK(c.Get("/v1/containers/a").status == 404);  // nothing of a refused body is registered
  // data stays a free-form object.
  CHECK(c.Post("/v1/containers",
               R"({"containers":[{"id":"a","region":"weur","data":{"slots":4,"x":{"y":1}}}]})")
            .status == 200);
}

TEST_CASE("unknown fields: drain, undrain and DELETE of a container refuse body fields") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "u", 1);
  CheckUnknown(c.Post("/v1/containers/u-0/drain", R"({"force":true})"), "force",
               "; this request takes no fields");
  CHECK(ContainerStatus(c, "u-0") == "available");
  REQUIRE(c.Post("/v1/containers/u-0/drain", "").status == 200);
  CheckUnknown(c.Post("/v1/containers/u-0/undrain", R"({"reason":"x"})"), "reason",
               "; this request takes no fields");
  CHECK(ContainerStatus(c, "u-0") == "draining");
  REQUIRE(c.Post("/v1/containers/u-0/undrain", "{}").status == 200);
  CheckUnknown(c.Request("DELETE", "/v1/containers/u-0", R"({"force":true})"), "force",
               "; this request takes no fields");
  CHECK(c.Get("/v1/containers/u-0").status == 200);
  CHECK(c.Request("DELETE", "/v1/containers/u-0", " ").status == 204);
}

TEST_CASE("unknown fields: POST /v1/heartbeats refuses them in the body and in each item") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "u", 1);
  CheckUnknown(c.Post("/v1/heartbeats", R"({"heartbeat":[{"container_id":"u-0"}]})"), "heartbeat",
               "; did you mean \"heartbeats\"?");
  CheckUnknown(
      c.Post("/v1/heartbeats",
             R"({"heartbeats":[{"container_id":"u-0"},{"container_id":"u-0","stat":"dead"}]})"),
      "heartbeats[1].stat", "; did you mean \"state\"?");
  CheckUnknown(
      c.Post("/v1/heartbeats", R"({"heartbeats":[{"container_id":"u-0","slots_used":1}]})"),
      "heartbeats[0].slots_used", "; known fields: container_id, ts_ms, load, state");
  CHECK(t.service->batcher()->stats().accepted.load() == 0);
  CHECK(c.Post("/v1/heartbeats", R"({"heartbeats":[{"container_id":"u-0","state":"ready"}]})")
            .status == 202);
  // A refused body's items are counted, for its key's budget, all the same.
  std::vector<batcher::Heartbeat> items;
  BodyError e;
  size_t sent = 0;
  CHECK_FALSE(ParseHeartbeats(R"({"heartbeats":[{"container_id":"a"},{"container_id":"b"}],"x":1})",
                              0, &items, &e, kDefaultMaxClockSkewMs, 0, &sent));
  CHECK(e.code == "invalid_request");
  CHECK(sent == 2);
}

TEST_CASE("unknown fields: the first is named, null or not, a long name cut short") {
  json j;
  BodyError e;
  CHECK(ParseJsonObject(R"({"b":1,"a":2})", FieldNames(kRenewFields), &j, &e) == false);
  CHECK(e.code == "invalid_request");
  CHECK(e.message == "unknown field \"a\"; known fields: token, lease_ms, shorten");  // in name order
  CHECK_FALSE(ParseJsonObject(R"({"token":1,"selector":null})", kRenewFields, &j, &e));
  CHECK(e.message.rfind("unknown field \"selector\"", 0) == 0);
  const std::string long_name(100000, 'q');
  CHECK_FALSE(ParseJsonObject("{\"" + long_name + "\":1}", kRenewFields, &j, &e));
  CHECK(e.message ==
        "unknown field \"" + long_name.substr(0, 64) + "...\"; known fields: token, lease_ms, shorten");
  // Known fields pass and are left to the parser; bad JSON is still invalid_json.
  CHECK(ParseJsonObject(R"({"token":1,"lease_ms":"x"})", kRenewFields, &j, &e));
  CHECK_FALSE(ParseJsonObject("{", kRenewFields, &j, &e));
  CHECK(e.code == "invalid_json");
  CHECK(ParseNoBody("", &e));
  CHECK(ParseNoBody(" \r\n", &e));
  CHECK(ParseNoBody("{}", &e));
  CHECK_FALSE(ParseNoBody("[]", &e));
  CHECK(e.code == "invalid_json");
}

// The fields each body knows are the ones docs/openapi.json documents, and
// it says no others are taken.
TEST_CASE("unknown fields: the known fields are the OpenAPI request schemas' properties") {
  std::ifstream in(EDGEALLOC_OPENAPI_JSON);
  REQUIRE(in.good());
  const json schemas = json::parse(in)["components"]["schemas"];
  const std::map<std::string, FieldNames> bodies = {
      {"ClaimRequest", kClaimFields},           {"RenewRequest", kRenewFields},
      {"RegisterRequest", kRegistrationFields}, {"ContainerSpec", kContainerSpecFields},
      {"HeartbeatsRequest", kHeartbeatsFields}, {"Heartbeat", kHeartbeatFields}};
  for (const auto& body : bodies) {
    INFO(body.first);
    const json& schema = schemas.at(body.first);
    CHECK(schema.value("additionalProperties", json(true)) == json(false));
    std::set<std::string> documented;
    const json& properties = schema.at("properties");
    for (auto p = properties.begin(); p != properties.end(); ++p) {
      documented.insert(p.key());
    }
    CHECK(documented == std::set<std::string>(body.second.begin(), body.second.end()));
  }
}

}  // namespace
}  // namespace server
