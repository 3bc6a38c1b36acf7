// The rules of the HTTP front through a real Service (docs/api.md
// "Requests"): open mode's Host and Origin, the JSON Content-Type, answers
// before a body is read, the claim and renew body bounds, and the watch of
// a waiting claim's connection past its bound.
#include "server/api/request_bodies.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "tests/server/service_fixture.h"
#include "tests/support/http_client.h"

namespace server {
namespace {

using fixture::MetricValue;

using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

const char kFleet[] = R"({"containers":[{"id":"w-1","region":"weur","pool":"chrome"}]})";

bool MetricBecomes(HttpClient& c, const std::string& series, double want) {
  return fixture::Eventually([&] { return MetricValue(c, series) == want; },
                             std::chrono::seconds(10));
}

// What the server writes back for a POST of `path` with `key` whose header
// promises a JSON body of `length` bytes that is never sent: an answer given
// on the header alone, or the transcript's end after ten seconds.
std::string AnswerToHeaderOnly(HttpClient& c, const std::string& path, const std::string& key,
                               size_t length) {
  return c.RawTranscript("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                             key + "\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(length) + "\r\n\r\n",
                         std::chrono::seconds(10));
}

// Issue: without a keys file a web page could re-register a container with
// a "simple" cross-site request (text/plain, another Origin and Host): 200.
TEST_CASE("edge: open mode refuses foreign Hosts and other origins, bodies must be JSON") {
  fixture::LiveService t;
  HttpClient c = t.Client();
  const std::map<std::string, std::string> attack = {
      {"Content-Type", "text/plain"}, {"Origin", "http://evil.example"}, {"Host", "evil.example"}};
  HttpReply r = c.Request("POST", "/v1/containers", kFleet, attack);
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "host_not_allowed");
  r = c.Request("POST", "/v1/containers", kFleet,
                {{"Origin", "http://evil.example"}, {"Content-Type", "application/json"}});
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "cross_origin");
  r = c.Request("POST", "/v1/containers", kFleet, {{"Sec-Fetch-Site", "cross-site"}});
  CHECK(r.ErrorCode() == "cross_origin");
  r = c.Request("POST", "/v1/containers", kFleet, {{"Content-Type", "text/plain"}});
  CHECK(r.status == 415);
  CHECK(r.ErrorCode() == "unsupported_media_type");
  CHECK(c.Get("/v1/containers/w-1").status == 404);  // nothing of it was taken
  // A loopback name, with the server's own origin (the dashboard's POSTs).
  r = c.Request("POST", "/v1/containers", kFleet,
                {{"Host", "localhost:" + std::to_string(t.service->port())},
                 {"Origin", "http://localhost:" + std::to_string(t.service->port())},
                 {"Content-Type", "application/json; charset=utf-8"}});
  CHECK(r.status == 200);
  CHECK(c.Request("POST", "/v1/containers/w-1/drain", "", {{"Content-Type", "text/plain"}})
            .status == 200);  // no body: no Content-Type asked
}

// Issue: a request with a bad key had its whole body read before its 401.
TEST_CASE("edge: a bad key's 401 comes on the header, before a large body") {
  fixture::LiveService t({}, fixture::kKeys);
  HttpClient c = t.Client();
  const std::string wire = AnswerToHeaderOnly(c, "/v1/containers", "wrong", 1000000);
  INFO(wire);
  CHECK(wire.rfind("HTTP/1.1 401 ", 0) == 0);
  CHECK(wire.find("Connection: close") != std::string::npos);
}

// Issue: a tenant past its claims_per_s had its claim bodies read and parsed
// (on the io thread) before the 429.
TEST_CASE("edge: past its claims_per_s a claim is 429 on its header, its body never read") {
  fixture::LiveService t({}, "adm admin\nslow tenant slow claims_per_s=0.01\n");
  HttpClient admin = t.Client("adm"), slow = t.Client("slow");
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);
  REQUIRE(slow.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  const std::string wire = AnswerToHeaderOnly(slow, "/v1/sessions", "slow", 100000);
  INFO(wire);
  CHECK(wire.rfind("HTTP/1.1 429 ", 0) == 0);
  CHECK(wire.find("rate_limited") != std::string::npos);
}

// A claim with every field at its limit, every character a non-BMP one
// written as two \uXXXX escapes, pretty printed.
std::string LargestClaim() {
  auto text = [](size_t n, char32_t first) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      const char32_t c = i == 0 ? first : U'\U0001F600';
      s += static_cast<char>(0xF0 | (c >> 18));
      s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (c & 0x3F));
    }
    return s;
  };
  json claim = {{"region", text(kMaxNameChars, U'\U0001F601')},
                {"pool", text(kMaxNameChars, U'\U0001F601')},
                {"idempotency_key", text(kMaxNameChars, U'\U0001F601')},
                {"lease_ms", 600000},
                {"wait_ms", 0},
                {"placement", "distributed"}};
  for (size_t i = 0; i < kMaxFallbackRegions; ++i) {
    const auto first = static_cast<char32_t>(U'\U0001F610' + i);
    claim["fallback_regions"].push_back(text(kMaxNameChars, first));
  }
  for (size_t i = 0; i < kMaxLabels; ++i) {
    const auto first = static_cast<char32_t>(U'\U0001F610' + i);
    claim["labels"][text(kMaxLabelKeyChars, first)] =
        text(kMaxLabelValueChars, U'\U0001F601');
  }
  // Every key an array, the values spread over them up to the bound in all.
  for (size_t i = 0; i < kMaxSelectorValues; ++i) {
    const auto key = static_cast<char32_t>(U'\U0001F610' + i % kMaxLabels);
    const auto value = static_cast<char32_t>(U'\U0001F620' + i);
    claim["selector"][text(kMaxLabelKeyChars, key)].push_back(text(kMaxLabelValueChars, value));
  }
  return claim.dump(4, ' ', /*ensure_ascii=*/true);
}

// Issue: a claim body of any size up to --max-body-bytes (1 MiB) was read and
// parsed whole; a valid one is far smaller.
TEST_CASE("edge: claim and renew bodies are bounded by what a valid one can be") {
  // docs/api.md, docs/openapi.json and README state these two figures.
  CHECK(kMaxClaimBodyBytes == 331385);
  CHECK(kMaxRenewBodyBytes == 223);
  fixture::LiveService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  const std::string largest = LargestClaim();
  INFO(largest.size() << " of " << kMaxClaimBodyBytes);
  CHECK(largest.size() <= kMaxClaimBodyBytes);
  HttpReply r = c.Post("/v1/sessions", largest);
  INFO(r.body);
  CHECK(r.status == 404);  // valid, and nothing registered matches its selector
  CHECK(r.ErrorCode() == "no_match");
  // A claim padded past the bound: refused on its length, before its
  // unknown field is seen.
  std::string padded = R"({"region":"weur","pool":"chrome","pad":")";
  padded += std::string(kMaxClaimBodyBytes + 1 - padded.size() - 2, 'x') + "\"}";
  REQUIRE(padded.size() == kMaxClaimBodyBytes + 1);
  r = c.Post("/v1/sessions", padded);
  CHECK(r.status == 413);
  CHECK(r.ErrorCode() == "body_too_large");
  const json session = json::parse(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").body);
  const std::string renew_path = "/v1/sessions/" + session["session_id"].get<std::string>() +
                                 "/renew";
  std::string renew = "{\"token\":" + std::to_string(session["token"].get<int64_t>()) + "}";
  CHECK(c.Post(renew_path, renew).status == 200);
  renew.insert(1, kMaxRenewBodyBytes, ' ');
  CHECK(c.Post(renew_path, renew).status == 413);
}

// Issue: past 64 KiB pipelined behind a waiting claim the watch stopped, and
// a client that then closed was still served a container, held for its lease.
TEST_CASE("edge: a waiting claim's client that sent over 64 KiB and closed is abandoned") {
  fixture::LiveService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  const json held = json::parse(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").body);
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), t.service->port()});
    const std::string body = R"({"region":"weur","pool":"chrome","wait_ms":20000})";
    boost::asio::write(socket, boost::asio::buffer(
                                   "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                   "application/json\r\nContent-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body));
    REQUIRE(MetricBecomes(c, "edgealloc_claim_waiters", 1));
    // Pipelined: past the 64 KiB the connection takes in while it waits.
    boost::asio::write(socket, boost::asio::buffer(std::string(96 * 1024, 'G')));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(MetricValue(c, "edgealloc_claim_waits_total{result=\"abandoned\"}") == 0);
  }  // closed
  CHECK(MetricBecomes(c, "edgealloc_claim_waits_total{result=\"abandoned\"}", 1));
  // The container freed goes to nobody.
  REQUIRE(c.Delete("/v1/sessions/" + held["session_id"].get<std::string>() +
                   "?token=" + std::to_string(held["token"].get<int64_t>()))
              .status == 204);
  CHECK(fixture::Eventually(
      [&] { return json::parse(c.Get("/v1/containers/w-1").body)["status"] == "available"; }));
}

}  // namespace
}  // namespace server
