#include "base/http_url.h"

#include <catch2/catch.hpp>
#include <string>

namespace base {
namespace {

TEST_CASE("http url: host, port and target, with the scheme's port when none is given") {
  HttpUrl u;
  std::string error;
  REQUIRE(ParseHttpUrl("http://127.0.0.1:8080", false, &u, &error));
  CHECK_FALSE(u.tls);
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == "8080");
  CHECK(u.target == "/");
  REQUIRE(ParseHttpUrl("http://browser/healthz?deep=1", false, &u, &error));
  CHECK(u.host == "browser");
  CHECK(u.port == "80");
  CHECK(u.target == "/healthz?deep=1");
  REQUIRE(ParseHttpUrl("http://[::1]:9222/json/version", false, &u, &error));
  CHECK(u.host == "::1");
  CHECK(u.port == "9222");
  CHECK(u.target == "/json/version");
  REQUIRE(ParseHttpUrl("https://hooks.example/edgealloc?t=a%20b", true, &u, &error));
  CHECK(u.tls);
  CHECK(u.host == "hooks.example");
  CHECK(u.port == "443");
  CHECK(u.target == "/edgealloc?t=a%20b");  // sent as written
  REQUIRE(ParseHttpUrl("HTTP://x:", false, &u, &error));  // an empty port is the default
  CHECK(u.port == "80");
}

TEST_CASE("http url: what cannot be connected to is refused, saying why without the text") {
  HttpUrl u;
  for (const char* bad : {"https://x", "127.0.0.1:8080", "http://", "http://x:0", "http://x:99999",
                          "http://x:8a", "http://[::1", "ftp://x/", "http://user:secret@x/",
                          "http://x/#frag", "http://[v1.x]/", "", "http:x"}) {
    INFO(bad);
    std::string error;
    CHECK_FALSE(ParseHttpUrl(bad, false, &u, &error));
    CHECK_FALSE(error.empty());
    CHECK(error.find("secret") == std::string::npos);
  }
  std::string error;
  CHECK_FALSE(ParseHttpUrl("ftp://x/", true, &u, &error));
  CHECK(error == "the scheme is not http:// or https://");
  CHECK_FALSE(ParseHttpUrl("https://x/", false, &u, &error));
  CHECK(error == "the scheme is not http://");
}

}  // namespace
}  // namespace base
