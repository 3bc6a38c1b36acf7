// HttpServer's admission of a request on its header (its Admitter) and the
// Host field every request must carry (RFC 9112 3.2).
#include "server/http/server.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "tests/support/http_client.h"

namespace server {
namespace {

// A server that refuses /refused 401 on its header, lets /small in with a
// body of at most 10 bytes, and echoes the body's size.
struct AdmittingServer final : Admitter {
  AdmittingServer() {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.max_body_bytes = 1 << 20;
    server = std::make_unique<HttpServer>(options, this);
    REQUIRE(server->Start().ok());
  }
  Admission Admit(const Request& header) const override {
    admitted.fetch_add(1);
    Admission admission;
    if (header.target() == "/refused") {
      admission.refusal = ErrorResponse(ApiError::kUnauthorized, "no");
      return admission;
    }
    if (header.target() == "/small") admission.max_body_bytes = 10;
    admission.handler = [this](Request req, Reply reply, ClientGoneWatch, ExtendDeadline) {
      handled.fetch_add(1);
      reply(JsonResponse(200, "{\"len\":" + std::to_string(req.body().size()) + "}"));
    };
    return admission;
  }
  mutable std::atomic<int> admitted{0}, handled{0};
  std::unique_ptr<HttpServer> server;
};

// Issue: a refused request's body was read whole before the refusal, so a
// client without a key could make the server buffer --max-body-bytes a
// connection; one that never sent its declared body waited 30 s for it.
TEST_CASE("http_admission: a refusal is answered on the header, its body never awaited") {
  AdmittingServer s;
  testing::HttpClient client(s.server->port());
  // A body of 100 MiB declared (over --max-body-bytes too) and never sent.
  std::string wire = client.RawTranscript(
      "POST /refused HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n",
      std::chrono::seconds(10));
  INFO(wire);
  CHECK(wire.rfind("HTTP/1.1 401 ", 0) == 0);
  CHECK(wire.find("Connection: close") != std::string::npos);
  CHECK(s.handled.load() == 0);
  // Without a body the connection goes on after the refusal.
  wire = client.RawTranscript(
      "GET /refused HTTP/1.1\r\nHost: x\r\n\r\nGET /fine HTTP/1.1\r\nHost: x\r\n"
      "Connection: close\r\n\r\n",
      std::chrono::seconds(10));
  CHECK(wire.rfind("HTTP/1.1 401 ", 0) == 0);
  CHECK(wire.find("HTTP/1.1 200 ") != std::string::npos);
}

TEST_CASE("http_admission: an admission's body bound is 413 before the body is read") {
  AdmittingServer s;
  testing::HttpClient client(s.server->port());
  std::string wire = client.RawTranscript(
      "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", std::chrono::seconds(10));
  INFO(wire);
  CHECK(wire.rfind("HTTP/1.1 413 ", 0) == 0);
  CHECK(wire.find("the most a valid body of this request can be") != std::string::npos);
  // Chunked: stopped while reading, at the same bound.
  testing::HttpReply r = client.Raw(
      "POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "b\r\nhello world\r\n0\r\n\r\n");
  CHECK(r.status == 413);
  CHECK(client.Post("/small", "0123456789").body == "{\"len\":10}");
  CHECK(client.Post("/other", std::string(5000, 'x')).body == "{\"len\":5000}");
  CHECK(s.handled.load() == 2);
}

// Issue: a request without Host, or with two, was answered 200.
TEST_CASE("http_admission: an HTTP/1.1 request without Host, or with two, is 400") {
  AdmittingServer s;
  testing::HttpClient client(s.server->port());
  for (const std::string head : {"GET /fine HTTP/1.1\r\n\r\n",
                                 "GET /fine HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
                                 "GET /fine HTTP/1.1\r\nHost: a b\r\n\r\n"}) {
    INFO(head);
    testing::HttpReply r = client.Raw(head);
    CHECK(r.status == 400);
    CHECK(r.ErrorCode() == "bad_request");
  }
  CHECK(s.admitted.load() == 0);
  CHECK(client.Raw("GET /fine HTTP/1.0\r\n\r\n").status == 200);  // 1.0 had no Host
  CHECK(client.Raw("GET /fine HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n").status == 200);
}

}  // namespace
}  // namespace server
