#include "server/http_server.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <thread>

#include "tests/support/http_client.h"

namespace server {
namespace {

// A server whose handler echoes the body, answers from another thread on
// /later, and throws on /throw.
struct EchoServer {
  explicit EchoServer(int64_t max_body = 1024) {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.max_body_bytes = max_body;
    server = std::make_unique<HttpServer>(options, [](Request req, Reply reply) {
      if (req.target() == "/throw") throw std::runtime_error("boom");
      if (req.target() == "/later") {
        std::thread([reply] { reply(JsonResponse(200, "{\"later\":true}")); }).detach();
        return;
      }
      reply(JsonResponse(200, "{\"len\":" + std::to_string(req.body().size()) + "}"));
    });
    REQUIRE(server->Start().ok());
  }
  std::unique_ptr<HttpServer> server;
};

TEST_CASE("http_server: one connection carries many requests, answered from any thread") {
  EchoServer s;
  testing::HttpClient client(s.server->port());
  for (int i = 0; i < 5; ++i) {
    testing::HttpReply r = client.Post("/echo", std::string(i * 10, 'x'));
    CHECK(r.status == 200);
    CHECK(r.body == "{\"len\":" + std::to_string(i * 10) + "}");
    CHECK(r.Header("connection") != "close");
  }
  CHECK(client.Get("/later").body == "{\"later\":true}");
  CHECK(s.server->open_connections() == 1);
}

TEST_CASE("http_server: a body over the limit is 413 body_too_large, even a large one") {
  EchoServer s(1 << 20);
  testing::HttpClient client(s.server->port());
  testing::HttpReply r = client.Post("/echo", std::string(2 << 20, 'x'));
  CHECK(r.status == 413);
  CHECK(r.ErrorCode() == "body_too_large");
  CHECK(r.Header("connection") == "close");
  // A chunked body has no Content-Length: the limit stops it while reading.
  std::string chunked =
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string chunk(64 * 1024, 'y');
  for (int i = 0; i < 20; ++i) chunked += "10000\r\n" + chunk + "\r\n";
  chunked += "0\r\n\r\n";
  r = client.Raw(chunked);
  CHECK(r.status == 413);
  CHECK(client.Post("/echo", "{}").status == 200);
}

TEST_CASE("http_server: headers over 8 KiB are 431 headers_too_large") {
  EchoServer s;
  testing::HttpClient client(s.server->port());
  testing::HttpReply r = client.Request("GET", "/echo", "", {{"X-Big", std::string(9000, 'h')}});
  CHECK(r.status == 431);
  CHECK(r.ErrorCode() == "headers_too_large");
  CHECK(client.Get("/echo").status == 200);
}

TEST_CASE("http_server: a malformed request is 400 and the server lives on") {
  EchoServer s;
  testing::HttpClient client(s.server->port());
  CHECK(client.Raw("BLAH\r\n\r\n").status == 400);
  CHECK(client.Raw("GET / HTTP/1.1\r\nContent-Length: zz\r\n\r\n").status == 400);
  CHECK(client.Get("/echo").status == 200);
}

TEST_CASE("http_server: an exception in a handler is a JSON 500, not a crash") {
  EchoServer s;
  testing::HttpClient client(s.server->port());
  testing::HttpReply r = client.Get("/throw");
  CHECK(r.status == 500);
  CHECK(r.ErrorCode() == "internal");
  CHECK(client.Get("/echo").status == 200);
}

TEST_CASE("http_server: Expect 100-continue gets its go-ahead") {
  EchoServer s;
  testing::HttpClient client(s.server->port());
  testing::HttpReply r =
      client.Raw("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                 "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
  // The client helper reads the first response, which is the 100.
  CHECK((r.status == 100 || r.status == 200));
}

TEST_CASE("http_server: after StopAccepting, new connections are refused") {
  EchoServer s;
  uint16_t port = s.server->port();
  s.server->StopAccepting();
  CHECK(s.server->WaitIdle(std::chrono::milliseconds(1000)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  testing::HttpClient client(port);
  CHECK_THROWS(client.Get("/echo"));
}

}  // namespace
}  // namespace server
