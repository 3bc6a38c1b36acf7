#include "server/client/http_client.h"

#include <catch2/catch.hpp>

namespace server {
namespace {

TEST_CASE("http client: URLs are http://HOST[:PORT][/PATH]") {
  HttpUrl u;
  std::string error;
  REQUIRE(ParseHttpUrl("http://127.0.0.1:8080", &u, &error));
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == "8080");
  CHECK(u.target == "/");
  REQUIRE(ParseHttpUrl("http://browser/healthz?deep=1", &u, &error));
  CHECK(u.host == "browser");
  CHECK(u.port == "80");
  CHECK(u.target == "/healthz?deep=1");
  REQUIRE(ParseHttpUrl("http://[::1]:9222/json/version", &u, &error));
  CHECK(u.host == "::1");
  CHECK(u.port == "9222");
  CHECK(u.target == "/json/version");
  for (const char* bad : {"https://x", "127.0.0.1:8080", "http://", "http://x:0", "http://x:99999",
                          "http://x:8a", "http://[::1"}) {
    INFO(bad);
    CHECK_FALSE(ParseHttpUrl(bad, &u, &error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("http client: nothing listening is an answer of none, with a reason") {
  HttpUrl u;
  std::string error;
  REQUIRE(ParseHttpUrl("http://127.0.0.1:1", &u, &error));
  HttpCall call;
  call.timeout_ms = 2000;
  HttpReply r = SendHttp(u, call);
  CHECK_FALSE(r.answered());
  CHECK_FALSE(r.error.empty());
}

TEST_CASE("http client: an id is escaped for its path segment") {
  CHECK(PathSegment("weur-1_a.b~c") == "weur-1_a.b~c");
  CHECK(PathSegment("a/b c?") == "a%2Fb%20c%3F");
}

}  // namespace
}  // namespace server
