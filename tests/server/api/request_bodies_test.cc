#include "server/api/request_bodies.h"

#include <catch2/catch.hpp>

namespace server {
namespace {

TEST_CASE("json_io: a claim body is read with its defaults") {
  allocator::ClaimRequest claim;
  BodyError e;
  REQUIRE(ParseClaim(R"({"region":"weur","fallback_regions":["eeur","wnam"],"x":1})", 1000,
                     &claim, &e));
  CHECK(claim.region == "weur");
  CHECK(claim.pool == "default");
  CHECK(claim.lease_ms == 0);
  CHECK(claim.fallback_regions == std::vector<std::string>{"eeur", "wnam"});
}

TEST_CASE("json_io: a body that is not a JSON object is invalid_json") {
  allocator::ClaimRequest claim;
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
    allocator::ClaimRequest claim;
    BodyError e;
    INFO(c.body);
    CHECK_FALSE(ParseClaim(c.body, 1000, &claim, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind(c.field, 0) == 0);
  }
  allocator::ClaimRequest claim;
  BodyError e;
  CHECK_FALSE(ParseClaim("{\"region\":\"" + std::string(257, 'r') + "\"}", 1000, &claim, &e));
  CHECK(ParseClaim("{\"region\":\"" + std::string(256, 'r') + "\"}", 1000, &claim, &e));
}

TEST_CASE("json_io: a registration names the bad container by its index") {
  std::vector<allocator::ContainerSpec> specs;
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
  std::vector<allocator::ContainerSpec> specs;
  BodyError e;
  REQUIRE(ParseRegistration(
      R"({"containers":[{"id":"c-1","region":"weur","latency_ms":12,"data":{"endpoint":"ws://x"}}]})",
      &specs, &e));
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].pool == "default");
  CHECK(specs[0].latency_ms == 12);
  CHECK(specs[0].data == R"({"endpoint":"ws://x"})");
}

TEST_CASE("json_io: the session reply splices data in without re-parsing it") {
  allocator::Session s;
  s.session_id = "s_1";
  s.container_id = "c\"1";
  s.region = "weur";
  s.pool = "chrome";
  s.token = 42;
  s.lease_expires_at_ms = 7;
  s.data = R"({"a":[1,2]})";
  CHECK(SessionJson(s) ==
        R"({"session_id":"s_1","container_id":"c\"1","region":"weur","pool":"chrome",)"
        R"("token":42,"lease_expires_at_ms":7,"data":{"a":[1,2]}})");
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

}  // namespace
}  // namespace server
