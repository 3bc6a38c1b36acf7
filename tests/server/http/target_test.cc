#include "server/http/target.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace server {
namespace {

TEST_CASE("router: percent-decoding leaves malformed escapes alone") {
  CHECK(PercentDecode("a%2", false) == "a%2");
  CHECK(PercentDecode("a%zz", false) == "a%zz");
  CHECK(PercentDecode("a+b", true) == "a b");
  CHECK(SplitPath("//a//b/") == std::vector<std::string>{"a", "b"});
}

TEST_CASE("router: ParseTarget takes origin- and absolute-form and refuses malformed escapes") {
  Target t;
  std::string error;
  REQUIRE(ParseTarget("//v1/a%20b//c/?x=%41", &t, &error));
  CHECK(t.segments == std::vector<std::string>{"v1", "a b", "c"});
  CHECK(t.query == "x=%41");
  REQUIRE(ParseTarget("http://host:1/v1/a%2Fb", &t, &error));
  CHECK(t.segments == std::vector<std::string>{"v1", "a/b"});
  for (const char* bad : {"/a%zz", "/a%2", "/a?b=%g0", "*", "v1/a", "ftp://h/a", "/a b", "/\xc3\xa9",
                          ""}) {
    INFO(bad);
    CHECK_FALSE(ParseTarget(bad, &t, &error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("router: ParseTarget refuses %00 in the path, whose segments become ids") {
  // PostgreSQL text cannot hold NUL (and libpq would cut an id at it, so that
  // DELETE /v1/containers/c-1%00x removed c-1): refused before any route.
  Target t;
  std::string error;
  for (const char* bad : {"/v1/sessions/s_1%00x", "/v1/containers/%00", "http://h/v1/a%00/b"}) {
    INFO(bad);
    CHECK_FALSE(ParseTarget(bad, &t, &error));
    CHECK(error.find("%00") != std::string::npos);
  }
  REQUIRE(ParseTarget("/v1/containers/c%01", &t, &error));
  CHECK(t.segments.back() == "c\x01");
}

}  // namespace
}  // namespace server
