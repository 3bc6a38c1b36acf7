#include "server/http/front_rules.h"

#include <catch2/catch.hpp>

namespace server {
namespace {

TEST_CASE("front_rules: loopback hosts are localhost, 127.0.0.0/8 and [::1], with any port") {
  for (const char* host : {"localhost", "LocalHost:8080", "127.0.0.1", "127.0.0.1:80",
                           "127.255.3.4:1", "[::1]", "[::1]:8080", "[::ffff:127.0.0.1]:9"}) {
    INFO(host);
    CHECK(IsLoopbackHost(host));
  }
  for (const char* host : {"", "evil.example", "localhost.evil.example", "evil.localhost:80",
                           "128.0.0.1", "0.0.0.0", "10.0.0.1:80", "127.1", "2130706433",
                           "127.0.0.1:", "127.0.0.1:x", "[::2]", "[::1", "::1", "[::1]x",
                           "127.0.0.1.nip.io", "localhost:80:80"}) {
    INFO(host);
    CHECK_FALSE(IsLoopbackHost(host));
  }
}

TEST_CASE("front_rules: an HTTP/1.1 request carries exactly one Host (RFC 9112 3.2)") {
  Request req{http::verb::get, "/", 11};
  CHECK_FALSE(HostFieldProblem(req).empty());
  req.insert(http::field::host, "127.0.0.1:80");
  CHECK(HostFieldProblem(req).empty());
  req.insert(http::field::host, "127.0.0.1:80");
  CHECK_FALSE(HostFieldProblem(req).empty());
  req.erase(http::field::host);
  req.insert(http::field::host, "a b");
  CHECK_FALSE(HostFieldProblem(req).empty());
  req.set(http::field::host, "");  // an empty authority is allowed
  CHECK(HostFieldProblem(req).empty());
  Request old{http::verb::get, "/", 10};  // HTTP/1.0 had none
  CHECK(HostFieldProblem(old).empty());
}

TEST_CASE("front_rules: a body is there with a Content-Length above 0 or a Transfer-Encoding") {
  Request req{http::verb::post, "/", 11};
  CHECK_FALSE(HasBody(req));
  req.set(http::field::content_length, "0");
  CHECK_FALSE(HasBody(req));
  CHECK_FALSE(ContentTypeRefusal(req).has_value());
  req.set(http::field::content_length, "7");
  CHECK(HasBody(req));
  CHECK(ContentTypeRefusal(req)->result_int() == 415);
  req.erase(http::field::content_length);
  req.set(http::field::transfer_encoding, "chunked");
  CHECK(HasBody(req));
}

}  // namespace
}  // namespace server
