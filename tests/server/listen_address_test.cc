#include "server/listen_address.h"

#include <catch2/catch.hpp>

#include <string>

namespace server {
namespace {

TEST_CASE("listen_address: loopback means localhost, 127.0.0.0/8 and ::1, and HOST:PORT splits") {
  CHECK(IsLoopbackHost("localhost"));
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK(IsLoopbackHost("127.255.0.9"));
  CHECK(IsLoopbackHost("::1"));
  CHECK_FALSE(IsLoopbackHost("0.0.0.0"));
  CHECK_FALSE(IsLoopbackHost("::"));
  CHECK_FALSE(IsLoopbackHost("10.0.0.1"));
  CHECK_FALSE(IsLoopbackHost("example.com"));
  std::string host, error;
  uint16_t port = 0;
  CHECK(SplitHostPort("[::1]:80", &host, &port, &error));
  CHECK(host == "::1");
  CHECK(port == 80);
  CHECK_FALSE(SplitHostPort("::1:80", &host, &port, &error));
  CHECK_FALSE(SplitHostPort("h:70000", &host, &port, &error));
  CHECK_FALSE(SplitHostPort(":80", &host, &port, &error));
}

}  // namespace
}  // namespace server
