#include "server/api/reply_bodies.h"

#include <catch2/catch.hpp>

namespace server {
namespace {

TEST_CASE("json_io: the session reply splices data in without re-parsing it") {
  store::Session s;
  s.session_id = "s_1";
  s.container_id = "c\"1";
  s.region = "weur";
  s.pool = "chrome";
  s.tenant = "acme";
  s.token = 42;
  s.lease_expires_at_ms = 7;
  s.data = R"({"a":[1,2]})";
  CHECK(SessionJson(s) ==
        R"({"session_id":"s_1","container_id":"c\"1","region":"weur","pool":"chrome",)"
        R"("tenant":"acme","token":42,"lease_expires_at_ms":7,"data":{"a":[1,2]},"labels":{}})");
  s.labels = R"({"owner":"ci-42"})";
  CHECK(SessionJson(s).find(R"("labels":{"owner":"ci-42"}})") != std::string::npos);
}

}  // namespace
}  // namespace server
