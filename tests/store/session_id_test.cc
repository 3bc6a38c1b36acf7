#include "store/session_id.h"

#include <string>

#include <catch2/catch.hpp>

namespace {

TEST_CASE("session_id: a new id tells its shard back, and sorts after the ids made before it") {
  std::string a, b;
  REQUIRE(store::NewSessionId(3, &a).ok());
  REQUIRE(store::NewSessionId(17, &b).ok());
  CHECK(a.size() == store::kSessionIdLength);
  CHECK(store::ShardOfSessionId(a, 4) == 3);
  CHECK(store::ShardOfSessionId(b, 18) == 17);
  CHECK(store::ShardOfSessionId(b, 17) == -1);  // no such shard here
  CHECK(a.substr(0, 14) <= b.substr(0, 14));    // "s_" and the time
}

TEST_CASE("session_id: an id of the layout before the time came first still finds its shard") {
  // "s_", shard 01, 32 hex digits: a session held across the upgrade.
  CHECK(store::ShardOfSessionId("s_01" + std::string(32, 'a'), 2) == 1);
  CHECK(store::ShardOfSessionId("s_01" + std::string(31, 'a'), 2) == -1);
  CHECK(store::ShardOfSessionId("x_01" + std::string(32, 'a'), 2) == -1);
  CHECK(store::ShardOfSessionId("s_zz" + std::string(32, 'a'), 2) == -1);
}

}  // namespace
