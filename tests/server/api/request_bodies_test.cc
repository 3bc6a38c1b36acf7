#include "server/api/request_bodies.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "batcher/coalesce.h"

namespace server {
namespace {

using batcher::Heartbeat;

TEST_CASE("json_io: a claim body is read with its defaults") {
  store::ClaimRequest claim;
  BodyError e;
  REQUIRE(ParseClaim(R"({"region":"weur","fallback_regions":["eeur","wnam"]})", 1000,
                     &claim, &e));
  CHECK(claim.region == "weur");
  CHECK(claim.pool == "default");
  CHECK(claim.lease_ms == 0);
  CHECK(claim.fallback_regions == std::vector<std::string>{"eeur", "wnam"});
}

TEST_CASE("json_io: claim labels become compact JSON with sorted keys, or nothing") {
  store::ClaimRequest claim;
  BodyError e;
  REQUIRE(ParseClaim(R"({"region":"w","labels":{"z":"1","a":"","\u00e9":"\"q\""}})", 1000,
                     &claim, &e));
  CHECK(claim.labels == "{\"a\":\"\",\"z\":\"1\",\"\u00e9\":\"\\\"q\\\"\"}");
  store::ClaimRequest none;
  REQUIRE(ParseClaim(R"({"region":"w","labels":{}})", 1000, &none, &e));
  CHECK(none.labels.empty());
  store::ClaimRequest null_labels;
  REQUIRE(ParseClaim(R"({"region":"w","labels":null})", 1000, &null_labels, &e));
  CHECK(null_labels.labels.empty());
}

TEST_CASE("json_io: claim labels out of bounds are invalid_field naming labels") {
  std::string sixteen, seventeen;
  for (int i = 0; i < 17; ++i) {
    std::string entry = (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":\"v\"";
    if (i < 16) sixteen += entry;
    seventeen += entry;
  }
  store::ClaimRequest ok;
  BodyError e;
  CHECK(ParseClaim(R"({"region":"w","labels":{)" + sixteen + "}}", 1000, &ok, &e));
  CHECK(ParseClaim(R"({"region":"w","labels":{")" + std::string(64, 'k') + R"(":")" +
                       std::string(256, 'v') + R"("}})",
                   1000, &ok, &e));
  for (const std::string& body :
       {R"({"region":"w","labels":{)" + seventeen + "}}",
        std::string(R"({"region":"w","labels":["a"]})"),
        std::string(R"({"region":"w","labels":"owner:me"})"),
        std::string(R"({"region":"w","labels":{"":"v"}})"),
        R"({"region":"w","labels":{")" + std::string(65, 'k') + R"(":"v"}})",
        R"({"region":"w","labels":{"k":")" + std::string(257, 'v') + R"("}})",
        std::string(R"({"region":"w","labels":{"k":1}})"),
        // ?label=KEY:VALUE could never match such a key.
        std::string(R"({"region":"w","labels":{"team:a":"v"}})"),
        std::string(R"({"region":"w","labels":{"k":null}})")}) {
    INFO(body);
    store::ClaimRequest claim;
    CHECK_FALSE(ParseClaim(body, 1000, &claim, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind("labels", 0) == 0);
  }
}

TEST_CASE("json_io: U+0000 in a claim's labels is invalid_field naming labels, on both engines") {
  // PostgreSQL text cannot hold NUL; a label with one made every
  // label-filtered list fail there (labels::jsonb), so neither engine takes it.
  for (const char* body : {R"({"region":"w","labels":{"k":"a\u0000b"}})",
                           R"({"region":"w","labels":{"k":"\u0000"}})",
                           R"({"region":"w","labels":{"a\u0000":"v"}})"}) {
    INFO(body);
    store::ClaimRequest claim;
    BodyError e;
    CHECK_FALSE(ParseClaim(body, 1000, &claim, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind("labels", 0) == 0);
    CHECK(e.message.find("U+0000") != std::string::npos);
  }
}

TEST_CASE("json_io: U+0000 in any string bound for the database is invalid_field naming it") {
  struct Case {
    const char* body;
    const char* field;
  };
  for (Case c : {Case{R"({"region":"w\u0000x"})", "region"},
                 Case{R"({"region":"w","pool":"\u0000"})", "pool"},
                 Case{R"({"region":"w","idempotency_key":"k\u0000"})", "idempotency_key"},
                 Case{R"({"region":"w","fallback_regions":["e","e\u0000"]})",
                      "fallback_regions[1]"}}) {
    INFO(c.body);
    store::ClaimRequest claim;
    BodyError e;
    CHECK_FALSE(ParseClaim(c.body, 1000, &claim, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind(c.field, 0) == 0);
    CHECK(e.message.find("U+0000") != std::string::npos);
  }
  for (Case c :
       {Case{R"({"containers":[{"id":"a\u0000b","region":"x"}]})", "containers[0].id"},
        Case{R"({"containers":[{"id":"a","region":"x\u0000"}]})", "containers[0].region"},
        Case{R"({"containers":[{"id":"a","region":"x","pool":"p\u0000"}]})",
             "containers[0].pool"},
        Case{R"({"containers":[{"id":"a","region":"x","data":{"k":"v\u0000"}}]})",
             "containers[0].data"},
        Case{R"({"containers":[{"id":"a","region":"x","data":{"k\u0000":1}}]})",
             "containers[0].data"},
        Case{R"({"containers":[{"id":"a","region":"x","data":{"k":[{"deep":["\u0000"]}]}}]})",
             "containers[0].data"}}) {
    INFO(c.body);
    std::vector<store::ContainerSpec> specs;
    BodyError e;
    CHECK_FALSE(ParseRegistration(c.body, &specs, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind(c.field, 0) == 0);
    CHECK(e.message.find("U+0000") != std::string::npos);
  }
  std::vector<Heartbeat> items;
  BodyError e;
  CHECK_FALSE(ParseHeartbeats(R"({"heartbeats":[{"container_id":"a"},{"container_id":"a\u0000"}]})",
                              1000, &items, &e));
  CHECK(e.code == "invalid_field");
  CHECK(e.message.rfind("heartbeats[1].container_id", 0) == 0);
  CHECK(e.message.find("U+0000") != std::string::npos);
  // Other control characters are still taken (and escaped in the JSON text).
  store::ClaimRequest ok;
  CHECK(ParseClaim(R"({"region":"w\u0001","labels":{"k":"\t"}})", 1000, &ok, &e));
  std::vector<store::ContainerSpec> specs;
  CHECK(ParseRegistration(R"({"containers":[{"id":"a","region":"x","data":{"k":"\u0001"}}]})",
                          &specs, &e));
}

TEST_CASE("json_io: a body that is not a JSON object is invalid_json") {
  store::ClaimRequest claim;
  BodyError e;
  CHECK_FALSE(ParseClaim("{not json", 1000, &claim, &e));
  CHECK(e.code == "invalid_json");
  CHECK_FALSE(ParseClaim("[]", 1000, &claim, &e));
  CHECK(e.code == "invalid_json");
  CHECK_FALSE(ParseClaim("", 1000, &claim, &e));
  CHECK(e.code == "invalid_json");
  CHECK_FALSE(ParseClaim(std::string(100000, '[') + std::string(100000, ']'), 1000, &claim, &e));
  CHECK(e.code == "invalid_json");
}

TEST_CASE("json_io: a wrong field is invalid_field and the message names it") {
  struct Case {
    const char* body;
    const char* field;
  };
  for (Case c : {Case{R"({"pool":"chrome"})", "region"}, Case{R"({"region":42})", "region"},
                 Case{R"({"region":""})", "region"},
                 Case{R"({"region":"w","lease_ms":-5})", "lease_ms"},
                 Case{R"({"region":"w","lease_ms":1001})", "lease_ms"},
                 Case{R"({"region":"w","lease_ms":1.5})", "lease_ms"},
                 Case{R"({"region":"w","lease_ms":"60"})", "lease_ms"},
                 Case{R"({"region":"w","fallback_regions":"eeur"})", "fallback_regions"},
                 Case{R"({"region":"w","fallback_regions":["a",7]})", "fallback_regions[1]"},
                 Case{R"({"region":"w","idempotency_key":""})", "idempotency_key"}}) {
    store::ClaimRequest claim;
    BodyError e;
    INFO(c.body);
    CHECK_FALSE(ParseClaim(c.body, 1000, &claim, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind(c.field, 0) == 0);
  }
  store::ClaimRequest claim;
  BodyError e;
  CHECK_FALSE(ParseClaim("{\"region\":\"" + std::string(257, 'r') + "\"}", 1000, &claim, &e));
  CHECK(ParseClaim("{\"region\":\"" + std::string(256, 'r') + "\"}", 1000, &claim, &e));
}

TEST_CASE("json_io: a registration names the bad container by its index") {
  std::vector<store::ContainerSpec> specs;
  BodyError e;
  CHECK_FALSE(ParseRegistration(R"({"containers":[{"region":"x"}]})", &specs, &e));
  CHECK(e.code == "invalid_field");
  CHECK(e.message.rfind("containers[0].id", 0) == 0);
  CHECK_FALSE(ParseRegistration(
      R"({"containers":[{"id":"a","region":"x"},{"id":"b","region":"x","data":[1]}]})", &specs,
      &e));
  CHECK(e.message.rfind("containers[1].data", 0) == 0);
  CHECK_FALSE(ParseRegistration(R"({"containers":{}})", &specs, &e));
  CHECK(e.message.rfind("containers", 0) == 0);
  CHECK_FALSE(ParseRegistration(R"({})", &specs, &e));
  CHECK(e.code == "invalid_field");
}

TEST_CASE("json_io: registration keeps data as JSON text and defaults the pool") {
  std::vector<store::ContainerSpec> specs;
  BodyError e;
  REQUIRE(ParseRegistration(
      R"({"containers":[{"id":"c-1","region":"weur","latency_ms":12,"data":{"endpoint":"ws://x"}}]})",
      &specs, &e));
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].pool == "default");
  CHECK(specs[0].latency_ms == 12);
  CHECK(specs[0].data == R"({"endpoint":"ws://x"})");
}

TEST_CASE("json_io: a renew needs an integer token") {
  int64_t token = 0, lease = 0;
  BodyError e;
  CHECK(ParseRenew(R"({"token":42})", 1000, &token, &lease, &e));
  CHECK(token == 42);
  CHECK(lease == 0);
  CHECK_FALSE(ParseRenew(R"({"lease_ms":5})", 1000, &token, &lease, &e));
  CHECK(e.message.rfind("token", 0) == 0);
  CHECK_FALSE(ParseRenew(R"({"token":"42"})", 1000, &token, &lease, &e));
  CHECK(ParseInt64("17", &token));
  CHECK_FALSE(ParseInt64("17x", &token));
  CHECK_FALSE(ParseInt64("", &token));
}

BodyError ParseError(const std::string& body) {
  std::vector<Heartbeat> out;
  BodyError error;
  CHECK_FALSE(ParseHeartbeats(body, 1, &out, &error));
  return error;
}

// `body` is refused as invalid_field, the message naming `field` first.
void CheckInvalidField(const std::string& body, const std::string& field) {
  BodyError e = ParseError(body);
  CHECK(e.code == "invalid_field");
  CHECK(e.message.rfind(field + ":", 0) == 0);
}

TEST_CASE("heartbeats: a valid body is read whole with the server's accept time on every item") {
  std::vector<Heartbeat> out;
  BodyError error;
  REQUIRE(ParseHeartbeats(
      R"({"heartbeats":[{"container_id":"c-1","ts_ms":1790000000000,"load":0.4,"state":"ready"},)"
      R"({"container_id":"c-2","state":"draining"},{"container_id":"c-3","state":"dead"},)"
      R"({"container_id":"c-4","ts_ms":null,"load":null,"state":null}]})",
      1790000000000, &out, &error));
  REQUIRE(out.size() == 4);
  CHECK(out[0].container_id == "c-1");
  CHECK(out[0].ts_ms == 1790000000000);
  CHECK(out[0].load == 0.4);
  CHECK(out[0].state == Heartbeat::State::kReady);
  CHECK(out[1].state == Heartbeat::State::kDraining);
  CHECK_FALSE(out[1].ts_ms.has_value());
  CHECK(out[2].state == Heartbeat::State::kDead);
  CHECK_FALSE(out[3].ts_ms.has_value());
  CHECK_FALSE(out[3].load.has_value());
  CHECK(out[3].state == Heartbeat::State::kNone);
  for (const Heartbeat& h : out) CHECK(h.accepted_ms == 1790000000000);
}

TEST_CASE("heartbeats: an invalid item rejects the whole body and the message names its index") {
  struct Case {
    const char* item;
    const char* field;
  };
  const Case cases[] = {
      {R"({"ts_ms":5})", "heartbeats[1].container_id"},
      {R"({"container_id":""})", "heartbeats[1].container_id"},
      {R"({"container_id":7})", "heartbeats[1].container_id"},
      {R"({"container_id":"c","ts_ms":"x"})", "heartbeats[1].ts_ms"},
      {R"({"container_id":"c","ts_ms":-1})", "heartbeats[1].ts_ms"},
      {R"({"container_id":"c","ts_ms":1.5})", "heartbeats[1].ts_ms"},
      {R"({"container_id":"c","ts_ms":18446744073709551615})", "heartbeats[1].ts_ms"},
      {R"({"container_id":"c","load":"high"})", "heartbeats[1].load"},
      {R"({"container_id":"c","state":"sleepy"})", "heartbeats[1].state"},
      {R"({"container_id":"c","state":1})", "heartbeats[1].state"},
      {R"("c")", "heartbeats[1]"},
  };
  for (const Case& c : cases) {
    std::string body = std::string(R"({"heartbeats":[{"container_id":"ok"},)") + c.item + "]}";
    INFO(body);
    CheckInvalidField(body, c.field);
  }
  std::string long_id(kMaxNameChars + 1, 'x');
  BodyError e = ParseError(R"({"heartbeats":[{"container_id":")" + long_id + R"("}]})");
  CHECK(e.message.rfind("heartbeats[0].container_id:", 0) == 0);
  // 256 characters of two bytes each are still 256 characters.
  std::string wide;
  for (size_t i = 0; i < kMaxNameChars; ++i) wide += "\xc3\xa9";
  std::vector<Heartbeat> out;
  BodyError none;
  CHECK(ParseHeartbeats(R"({"heartbeats":[{"container_id":")" + wide + R"("}]})", 1, &out, &none));
}

TEST_CASE("heartbeats: a body that is not a JSON object is invalid_json") {
  // 1e999 is beyond a double: the JSON parser refuses the whole body.
  for (const char* body : {"", "{", "[]", "42", "\"heartbeats\"", "null",
                           R"({"heartbeats":[{"container_id":"c","load":1e999}]})"}) {
    INFO(body);
    CHECK(ParseError(body).code == "invalid_json");
  }
}

TEST_CASE("heartbeats: a missing or empty or non-array list is invalid_field naming heartbeats") {
  for (const char* body : {R"({})", R"({"heartbeats":null})", R"({"heartbeats":[]})",
                           R"({"heartbeats":"nope"})", R"({"heartbeats":{"container_id":"c"}})"}) {
    INFO(body);
    CheckInvalidField(body, "heartbeats");
  }
}

TEST_CASE("heartbeats: one container's items read fold by the batcher's rule") {
  std::vector<Heartbeat> out;
  BodyError error;
  size_t sent = 0;
  REQUIRE(ParseHeartbeats(
      R"({"heartbeats":[{"container_id":"c-1","ts_ms":5,"load":0.1},)"
      R"({"container_id":"c-2"},{"container_id":"c-1","ts_ms":7,"load":0.2},)"
      R"({"container_id":"c-1","ts_ms":6,"load":0.9},{"container_id":"c-1","state":"dead"},)"
      R"({"container_id":"c-1","ts_ms":9},{"container_id":"c-2"}]})",
      100, &out, &error, kDefaultMaxClockSkewMs, 0, &sent));
  CHECK(sent == 7);
  REQUIRE(out.size() == 7);
  CHECK(batcher::CoalesceReports(&out) == 3);
  // c-1's first three: one report, the newest's (an older one is liveness
  // only); c-2's two: one; the state report and the one after it stand.
  REQUIRE(out.size() == 4);
  CHECK(out[0].container_id == "c-1");
  CHECK(out[0].ts_ms == 7);
  CHECK(out[0].load == 0.2);
  CHECK(out[1].container_id == "c-2");
  CHECK(out[2].container_id == "c-1");
  CHECK(out[2].state == Heartbeat::State::kDead);
  CHECK(out[3].container_id == "c-1");
  CHECK(out[3].ts_ms == 9);
  // The items sent are told even when the body is refused.
  CHECK_FALSE(ParseHeartbeats(R"({"heartbeats":[{"container_id":"c"},{"ts_ms":1}]})", 1, &out,
                              &error, kDefaultMaxClockSkewMs, 0, &sent));
  CHECK(sent == 2);
}

TEST_CASE("heartbeats: more items than the per-request bound are refused whole") {
  std::string body = R"({"heartbeats":[)";
  for (size_t i = 0; i <= kMaxHeartbeatsPerRequest; ++i) {
    body += (i ? "," : "") + std::string(R"({"container_id":"c"})");
  }
  body += "]}";
  CheckInvalidField(body, "heartbeats");
}

TEST_CASE("heartbeats: ts_ms may be ahead of the accept time by the skew and not a millisecond more") {
  std::vector<Heartbeat> out;
  BodyError error;
  const std::string at_limit = R"({"heartbeats":[{"container_id":"c","ts_ms":1500}]})";
  CHECK(ParseHeartbeats(at_limit, 1000, &out, &error, 500));
  CHECK_FALSE(ParseHeartbeats(at_limit, 999, &out, &error, 500));
  CHECK(error.code == "invalid_field");
  CHECK(error.message.rfind("heartbeats[0].ts_ms: is more than 500 ms ahead", 0) == 0);
  // Skew 0: nothing ahead of the server's clock; a skew near INT64_MAX does
  // not overflow.
  CHECK_FALSE(ParseHeartbeats(at_limit, 1499, &out, &error, 0));
  CHECK(ParseHeartbeats(R"({"heartbeats":[{"container_id":"c","ts_ms":9223372036854775807}]})", 5,
                        &out, &error, INT64_MAX));
  // On the engine's clock: this node's plus the offset measured from it.
  CHECK(ParseHeartbeats(at_limit, 999, &out, &error, 500, 1));
  CHECK_FALSE(ParseHeartbeats(at_limit, 1000, &out, &error, 500, -1));
  // The default is 60 s.
  CHECK(ParseHeartbeats(R"({"heartbeats":[{"container_id":"c","ts_ms":60001}]})", 1, &out, &error));
  CHECK_FALSE(
      ParseHeartbeats(R"({"heartbeats":[{"container_id":"c","ts_ms":60002}]})", 1, &out, &error));
}

}  // namespace
}  // namespace server
