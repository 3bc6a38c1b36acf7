#include "server/api/session_routes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <future>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>
#include <thread>

#include "base/clock.h"
#include "server/service.h"
#include "tests/server/service_fixture.h"
#include "tests/server/storage_double.h"
#include "tests/support/engines.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace {

using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

// A real edgealloc on 127.0.0.1, a free port and a fresh database.
struct TestService {
  explicit TestService(const std::string& keys = "", int64_t quota = store::kUnlimited) {
    ServeConfig cfg;
    cfg.db = dir.File("alloc.db");
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.threads = 2;
    cfg.max_sessions_per_tenant = quota;
    cfg.max_lease_ms = 600000;
    if (!keys.empty()) {
      std::ofstream(dir.File("keys")) << keys;
      cfg.keys_file = dir.File("keys");
    }
    service = std::make_unique<Service>(cfg);
    store::Status s = service->Start();
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  HttpClient Client(const std::string& key = "") { return HttpClient(service->port(), key); }

  testing::TempDir dir;
  std::unique_ptr<Service> service;
};

json Json(const HttpReply& r) { return json::parse(r.body); }

const char kFleet[] =
    R"({"containers":[{"id":"w-1","region":"weur","pool":"chrome","latency_ms":3,)"
    R"("data":{"endpoint":"ws://w1"}},{"id":"w-2","region":"weur","pool":"chrome"}]})";

// Registers kFleet and claims both its containers: weur/chrome is full.
void ExhaustFleet(HttpClient& c) {
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
}

TEST_CASE("routes: a container is registered, claimed, renewed and released") {
  TestService t;
  HttpClient c = t.Client();
  HttpReply r = c.Post("/v1/containers", kFleet);
  REQUIRE(r.status == 200);
  CHECK(Json(r)["registered"] == 2);

  r = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","lease_ms":60000})");
  REQUIRE(r.status == 201);
  CHECK(r.Header("content-type") == "application/json");
  json s = Json(r);
  std::string id = s["session_id"];
  int64_t token = s["token"];
  CHECK(s["region"] == "weur");
  CHECK(s["data"].is_object());

  r = c.Get("/v1/containers/" + std::string(s["container_id"]));
  REQUIRE(r.status == 200);
  CHECK(Json(r)["status"] == "picked");
  CHECK(Json(r)["session_id"] == id);

  r = c.Get("/v1/sessions/" + id);
  CHECK(r.status == 200);
  CHECK(Json(r)["token"] == token);

  r = c.Post("/v1/sessions/" + id + "/renew", json{{"token", token + 1}}.dump());
  CHECK(r.status == 409);
  CHECK(r.ErrorCode() == "stale_token");
  r = c.Post("/v1/sessions/" + id + "/renew", json{{"token", token}, {"lease_ms", 120000}}.dump());
  CHECK(r.status == 200);

  r = c.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token + 7));
  CHECK(r.status == 409);
  CHECK(r.ErrorCode() == "stale_token");
  CHECK(c.Delete("/v1/sessions/" + id).ErrorCode() == "invalid_field");
  CHECK(c.Delete("/v1/sessions/" + id + "?token=x").ErrorCode() == "invalid_field");
  r = c.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token));
  CHECK(r.status == 204);
  CHECK(r.body.empty());
  // A release repeated with the same token is 204 again (idempotent).
  r = c.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token));
  CHECK(r.status == 204);
  CHECK(r.body.empty());
}

TEST_CASE("routes: an ended session's GET, renew and release answer 410 session_ended with its "
          "end_reason and ended_at_ms") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  HttpClient admin = t.Client("adm");
  HttpClient acme = t.Client("acme-key");
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);
  HttpReply r = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(r.status == 201);
  const std::string id = Json(r)["session_id"];
  const int64_t token = Json(r)["token"];
  const int64_t before = base::NowMs();
  REQUIRE(admin.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token)).status == 204);
  for (HttpReply ended : {acme.Get("/v1/sessions/" + id),
                          acme.Post("/v1/sessions/" + id + "/renew", json{{"token", token}}.dump()),
                          acme.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token - 1))}) {
    CHECK(ended.status == 410);
    CHECK(ended.ErrorCode() == "session_ended");
    const json error = Json(ended)["error"];
    CHECK(error["end_reason"] == "released_by_admin");
    CHECK(error["ended_at_ms"].get<int64_t>() >= before);
    CHECK(error["message"].get<std::string>().find(id) != std::string::npos);
  }
  // Another tenant learns nothing of it.
  CHECK(t.Client("bolt-key").Get("/v1/sessions/" + id).status == 403);
  // An expired lease is told apart from a release.
  r = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","lease_ms":1})");
  REQUIRE(r.status == 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r = acme.Get("/v1/sessions/" + std::string(Json(r)["session_id"]));
  CHECK(r.status == 410);
  CHECK(Json(r)["error"]["end_reason"] == "expired");
}

TEST_CASE("routes: an idempotent retry replays the session with Idempotent-Replayed") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  const char body[] = R"({"region":"weur","pool":"chrome","idempotency_key":"k-1"})";
  HttpReply a = c.Post("/v1/sessions", body);
  HttpReply b = c.Post("/v1/sessions", body);
  REQUIRE(a.status == 201);
  REQUIRE(b.status == 201);
  CHECK(a.Header("idempotent-replayed").empty());
  CHECK(b.Header("idempotent-replayed") == "true");
  CHECK(Json(a)["session_id"] == Json(b)["session_id"]);
}

TEST_CASE("routes: an exhausted pool is 503 no_capacity with Retry-After, after a wait its estimate") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  HttpReply r = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "no_capacity");
  CHECK(r.Header("retry-after") == "1");
  // A claim that waited 2 s with nothing freed meanwhile (no pace known) is
  // told to wait as long again, not always 1 s.
  HttpReply waited = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":2000})");
  CHECK(waited.status == 503);
  CHECK(waited.ErrorCode() == "no_capacity");
  CHECK(waited.Header("retry-after") == "2");
}

TEST_CASE("routes: a tenant at its quota gets 429 quota_exceeded") {
  TestService t("", /*quota=*/1);
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  HttpReply r = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  CHECK(r.status == 429);
  CHECK(r.ErrorCode() == "quota_exceeded");
}

TEST_CASE("routes: a picked container cannot be removed, a free one can, and drained") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", R"({"containers":[{"id":"only","region":"r"}]})").status ==
          200);
  HttpReply s = c.Post("/v1/sessions", R"({"region":"r"})");
  REQUIRE(s.status == 201);
  HttpReply r = c.Delete("/v1/containers/only");
  CHECK(r.status == 409);
  CHECK(r.ErrorCode() == "conflict");
  r = c.Post("/v1/containers/only/drain", "");
  CHECK(r.status == 200);
  CHECK(c.Delete("/v1/sessions/" + std::string(Json(s)["session_id"]) +
                 "?token=" + std::to_string(int64_t(Json(s)["token"])))
            .status == 204);
  CHECK(Json(c.Get("/v1/containers/only"))["status"] == "draining");
  CHECK(c.Delete("/v1/containers/only").status == 204);
  CHECK(c.Get("/v1/containers/only").status == 404);
  CHECK(c.Delete("/v1/containers/only").status == 404);
}

TEST_CASE("routes: malformed bodies are 400 with the docs/api.md code, naming the field") {
  TestService t;
  HttpClient c = t.Client();
  CHECK(c.Post("/v1/sessions", "{not json").ErrorCode() == "invalid_json");
  CHECK(c.Post("/v1/sessions", "[]").ErrorCode() == "invalid_json");
  HttpReply r = c.Post("/v1/containers", R"({"containers":[{"region":"x"}]})");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_field");
  CHECK(Json(r)["error"]["message"].get<std::string>().find("containers[0].id") !=
        std::string::npos);
  r = c.Post("/v1/sessions", R"({"region":"weur","lease_ms":600001})");
  CHECK(r.ErrorCode() == "invalid_field");
  CHECK(c.Post("/v1/sessions/s_x/renew", "{}").ErrorCode() == "invalid_field");
}

TEST_CASE("routes: unknown paths are 404 and known paths with a wrong method 405") {
  TestService t;
  HttpClient c = t.Client();
  HttpReply r = c.Get("/v1/nowhere");
  CHECK(r.status == 404);
  CHECK(r.ErrorCode() == "not_found");
  r = c.Request("PUT", "/v1/sessions", "{}");
  CHECK(r.status == 405);
  CHECK(r.ErrorCode() == "method_not_allowed");
  CHECK(r.Header("allow") == "POST, GET, HEAD");
  CHECK(c.Get("/v1/sessions/s_does_not_exist").ErrorCode() == "not_found");
  CHECK(c.Get("/v1/containers/nope").ErrorCode() == "not_found");
  CHECK(c.Get("/healthz").status == 200);
  CHECK(c.Get("/readyz").status == 200);
}

TEST_CASE("routes: keys decide who may do what, and a tenant sees only its own sessions") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\nbox container\n");
  HttpClient anon = t.Client();
  HttpClient admin = t.Client("adm");
  HttpClient acme = t.Client("acme-key");
  HttpClient bolt = t.Client("bolt-key");
  HttpClient box = t.Client("box");

  HttpReply r = anon.Post("/v1/containers", kFleet);
  CHECK(r.status == 401);
  CHECK(r.ErrorCode() == "unauthorized");
  CHECK(t.Client("wrong").Get("/v1/sessions/x").status == 401);
  CHECK(anon.Get("/healthz").status == 200);
  r = acme.Post("/v1/containers", kFleet);
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "forbidden");
  CHECK(box.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 403);
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);

  r = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(r.status == 201);
  std::string id = Json(r)["session_id"];
  int64_t token = Json(r)["token"];
  CHECK(acme.Get("/v1/sessions/" + id).status == 200);
  r = bolt.Get("/v1/sessions/" + id);
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "forbidden");
  CHECK(bolt.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token)).status == 403);
  CHECK(admin.Get("/v1/sessions/" + id).status == 200);
  CHECK(acme.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token)).status == 204);
}

TEST_CASE("routes: another tenant asking about an expired session gets 403, not has expired") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  HttpClient admin = t.Client("adm");
  HttpClient acme = t.Client("acme-key");
  HttpClient bolt = t.Client("bolt-key");
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);
  HttpReply r = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","lease_ms":1})");
  REQUIRE(r.status == 201);
  std::string id = Json(r)["session_id"];
  int64_t token = Json(r)["token"];
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r = bolt.Get("/v1/sessions/" + id);
  CHECK(r.status == 403);
  CHECK(r.body.find("expired") == std::string::npos);
  r = bolt.Post("/v1/sessions/" + id + "/renew", json{{"token", token}}.dump());
  CHECK(r.status == 403);
  CHECK(r.body.find("expired") == std::string::npos);
  r = bolt.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token));
  CHECK(r.status == 403);
  // Its own tenant still learns that it expired.
  CHECK(acme.Get("/v1/sessions/" + id).status == 410);
}

TEST_CASE("routes: a registration naming one id twice is 400 invalid_field naming the index") {
  TestService t;
  HttpClient c = t.Client();
  HttpReply r = c.Post("/v1/containers",
                       R"({"containers":[{"id":"d-1","region":"weur"},{"id":"d-2","region":"weur"},)"
                       R"({"id":"d-1","region":"eeur"}]})");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_field");
  CHECK(r.body.find("containers[2].id") != std::string::npos);
  CHECK(c.Get("/v1/containers/d-2").status == 404);  // nothing of it taken
}

TEST_CASE("routes: HEAD answers every GET route with its headers and no body") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  HttpReply r = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(r.status == 201);
  std::string id = Json(r)["session_id"];
  for (const std::string& target :
       std::vector<std::string>{"/healthz", "/readyz", "/v1/sessions/" + id, "/v1/containers/w-1",
                                "/v1/capacity", "/metrics", "/dashboard"}) {
    INFO(target);
    HttpReply get = c.Get(target);
    REQUIRE(get.status == 200);
    // The HEAD, then a GET on the same connection: the GET's answer must
    // follow the HEAD's headers at once (a body after a HEAD would be read
    // as the next response).
    std::string wire =
        c.RawTranscript("HEAD " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    CHECK(wire.rfind("HTTP/1.1 200 ", 0) == 0);
    size_t end = wire.find("\r\n\r\n");
    REQUIRE(end != std::string::npos);
    CHECK(wire.compare(end + 4, 13, "HTTP/1.1 200 ") == 0);
    CHECK(wire.find("Content-Type: " + get.Header("content-type")) < end);
  }
  // A HEAD on a path with no GET is still 405, and GET routes allow HEAD.
  std::string wire = c.RawTranscript(
      "HEAD /v1/sessions/x/renew HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  CHECK(wire.rfind("HTTP/1.1 405 ", 0) == 0);
  r = c.Request("PUT", "/healthz");
  CHECK(r.status == 405);
  CHECK(r.Header("allow") == "GET, HEAD");
}

TEST_CASE("routes: an absolute-form target routes by its path") {
  TestService t;
  HttpClient c = t.Client();
  HttpReply r = c.Raw("GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(r.status == 200);
  r = c.Raw(
      "GET http://example.com:8080/v1/containers/nope?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(r.status == 404);
  CHECK(r.ErrorCode() == "not_found");
}

TEST_CASE("routes: a malformed target is 400 bad_request") {
  TestService t;
  HttpClient c = t.Client();
  for (std::string target : {"/v1/sessions/%zz", "/v1/sessions/a%2", "/v1/sessions/x?token=%g1",
                             "*", "healthz"}) {
    INFO(target);
    HttpReply r = c.Raw("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    CHECK(r.status == 400);
    CHECK(r.ErrorCode() == "bad_request");
  }
  // Well-formed escapes still decode: %2F stays inside its segment.
  HttpReply r = c.Get("/v1/containers/a%2Fb");
  CHECK(r.status == 404);
  CHECK(r.body.find("a/b") != std::string::npos);
}

TEST_CASE("routes: Expect 100-continue is not answered before the key is checked") {
  TestService t("adm admin\nacme-key tenant acme\n");
  HttpClient c = t.Client();
  // The body is not sent: a client waiting for 100 Continue must get the 401.
  std::string wire = c.RawTranscript(
      "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n"
      "Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n",
      std::chrono::milliseconds(1500));
  CHECK(wire.rfind("HTTP/1.1 401 ", 0) == 0);
  CHECK(wire.find("100 Continue") == std::string::npos);
  // A good key gets its 100 Continue, then the answer to the body.
  wire = c.RawTranscript(
      "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer acme-key\r\n"
      "Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
      "Connection: close\r\n\r\n{}",
      std::chrono::milliseconds(1500));
  CHECK(wire.rfind("HTTP/1.1 100 Continue", 0) == 0);
  CHECK(wire.find("HTTP/1.1 400 ") != std::string::npos);  // region is required
}

TEST_CASE("routes: a 2 MiB body is 413 and the service goes on") {
  TestService t;
  HttpClient c = t.Client();
  HttpReply r = c.Post("/v1/sessions", "{\"region\":\"" + std::string(2 << 20, 'x') + "\"}");
  CHECK(r.status == 413);
  CHECK(r.ErrorCode() == "body_too_large");
  CHECK(c.Get("/healthz").status == 200);
}

TEST_CASE("routes: the demo fleet can be claimed from at once") {
  testing::TempDir dir;
  ServeConfig cfg;
  cfg.db = dir.File("demo.db");
  cfg.port = 0;
  cfg.threads = 1;
  cfg.demo = true;
  Service service(cfg);
  REQUIRE(service.Start().ok());
  HttpClient c(service.port());
  HttpReply r = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(r.status == 201);
  CHECK(Json(r)["data"]["endpoint"].get<std::string>().rfind("ws://demo-weur-chrome-", 0) == 0);
  // README's packed claim with a selector: the fastest arm container of
  // the workers pool, and the next such claim fills its next slot.
  const std::string packed = R"({"region":"weur","pool":"workers","placement":"packed",)"
                             R"("selector":{"arch":"arm"}})";
  HttpReply first = c.Post("/v1/sessions", packed);
  REQUIRE(first.status == 201);
  CHECK(Json(first)["container_id"] == "demo-weur-workers-1");
  HttpReply second = c.Post("/v1/sessions", packed);
  REQUIRE(second.status == 201);
  CHECK(Json(second)["container_id"] == "demo-weur-workers-1");
  CHECK(Json(second)["slot"] != Json(first)["slot"]);
  json container = Json(c.Get("/v1/containers/demo-weur-workers-1"));
  CHECK(container["slots"] == 4);
  CHECK(container["attributes"] == json{{"arch", "arm"}});
  service.Stop();
}


TEST_CASE("routes: GET /v1/limits shows a tenant its quota and its sessions, never another's") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\nbox container\n",
                /*quota=*/2);
  HttpClient admin = t.Client("adm");
  HttpClient acme = t.Client("acme-key");
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);
  HttpReply r = acme.Get("/v1/limits");
  REQUIRE(r.status == 200);
  CHECK(Json(r) == json::parse(R"({"tenant":"acme","max_sessions":2,"sessions":0,)"
                               R"("claims_per_s":null,"claim_tokens":null,)"
                               R"("max_waiters":1000,"waiting":0})"));
  HttpReply claimed = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(claimed.status == 201);
  CHECK(Json(acme.Get("/v1/limits"))["sessions"] == 1);
  CHECK(Json(t.Client("bolt-key").Get("/v1/limits"))["sessions"] == 0);
  CHECK(Json(acme.Get("/v1/limits?tenant=acme"))["sessions"] == 1);  // its own, named

  r = acme.Get("/v1/limits?tenant=bolt");
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "forbidden");
  r = admin.Get("/v1/limits");  // its own tenant's
  REQUIRE(r.status == 200);
  CHECK(Json(r)["tenant"] == "default");
  r = admin.Get("/v1/limits?tenant=acme");
  REQUIRE(r.status == 200);
  CHECK(Json(r)["tenant"] == "acme");
  CHECK(Json(r)["max_sessions"] == 2);
  CHECK(Json(r)["sessions"] == 1);
  CHECK(t.Client("box").Get("/v1/limits").status == 403);
  CHECK(t.Client().Get("/v1/limits").status == 401);

  const json session = Json(claimed);
  REQUIRE(acme.Delete("/v1/sessions/" + session["session_id"].get<std::string>() +
                      "?token=" + std::to_string(session["token"].get<int64_t>()))
              .status == 204);
  CHECK(Json(acme.Get("/v1/limits"))["sessions"] == 0);
}

TEST_CASE("routes: GET /v1/limits says null for no quota") {
  TestService t;
  HttpReply r = t.Client().Get("/v1/limits");  // open mode: loopback is admin of default
  REQUIRE(r.status == 200);
  CHECK(Json(r) == json::parse(R"({"tenant":"default","max_sessions":null,"sessions":0,)"
                               R"("claims_per_s":null,"claim_tokens":null,)"
                               R"("max_waiters":1000,"waiting":0})"));
  r = t.Client().Get("/v1/limits?tenant=anyone");
  REQUIRE(r.status == 200);
  CHECK(Json(r)["tenant"] == "anyone");
  CHECK(Json(r)["max_sessions"].is_null());
}

// Six containers of weur/chrome.
const char kSixFleet[] =
    R"({"containers":[{"id":"w-1","region":"weur","pool":"chrome"},)"
    R"({"id":"w-2","region":"weur","pool":"chrome"},{"id":"w-3","region":"weur","pool":"chrome"},)"
    R"({"id":"w-4","region":"weur","pool":"chrome"},{"id":"w-5","region":"weur","pool":"chrome"},)"
    R"({"id":"w-6","region":"weur","pool":"chrome"}]})";

TEST_CASE("routes: GET /v1/limits reports a tenant's own limits from its keys line, and their use") {
  TestService t("adm admin\n"
                "acme-key tenant acme max_sessions=5 claims_per_s=20 max_waiters=7\n"
                "acme-2 tenant acme\n"
                "bolt-key tenant bolt\n",
                /*quota=*/2);
  HttpClient admin = t.Client("adm");
  REQUIRE(admin.Post("/v1/containers", kSixFleet).status == 200);
  HttpClient acme = t.Client("acme-key");
  REQUIRE(acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  for (HttpClient* c : {&acme, &admin}) {
    HttpReply r = c->Get(c == &admin ? "/v1/limits?tenant=acme" : "/v1/limits");
    INFO(r.body);
    REQUIRE(r.status == 200);
    json l = Json(r);
    CHECK(l["tenant"] == "acme");
    CHECK(l["max_sessions"] == 5);  // its own, not the server's 2
    CHECK(l["sessions"] == 1);
    CHECK(l["claims_per_s"] == 20);
    CHECK(l["claim_tokens"].get<double>() >= 18.9);  // 20 less the claim, refilling
    CHECK(l["claim_tokens"].get<double>() <= 20);
    CHECK(l["max_waiters"] == 7);
    CHECK(l["waiting"] == 0);
  }
  // Its other key has the same limits: they are the tenant's.
  CHECK(Json(t.Client("acme-2").Get("/v1/limits"))["max_sessions"] == 5);
  // bolt has no line limits: the server's.
  json b = Json(t.Client("bolt-key").Get("/v1/limits"));
  CHECK(b["max_sessions"] == 2);
  CHECK(b["claims_per_s"].is_null());
  CHECK(b["max_waiters"] == 1000);
}

TEST_CASE("routes: a tenant's max_sessions from its keys line is its quota, not the server's") {
  TestService t("adm admin\nacme-key tenant acme max_sessions=3\nbolt-key tenant bolt\n",
                /*quota=*/1);
  REQUIRE(t.Client("adm").Post("/v1/containers", kSixFleet).status == 200);
  HttpClient acme = t.Client("acme-key"), bolt = t.Client("bolt-key");
  const char claim[] = R"({"region":"weur","pool":"chrome"})";
  for (int i = 0; i < 3; ++i) CHECK(acme.Post("/v1/sessions", claim).status == 201);
  HttpReply r = acme.Post("/v1/sessions", claim);
  CHECK(r.status == 429);
  CHECK(r.ErrorCode() == "quota_exceeded");
  CHECK(bolt.Post("/v1/sessions", claim).status == 201);
  CHECK(bolt.Post("/v1/sessions", claim).ErrorCode() == "quota_exceeded");
}

TEST_CASE("routes: past its claims_per_s a tenant gets 429 rate_limited with Retry-After") {
  TestService t("adm admin\nacme-key tenant acme claims_per_s=2\nbolt-key tenant bolt\n");
  REQUIRE(t.Client("adm").Post("/v1/containers", kSixFleet).status == 200);
  HttpClient acme = t.Client("acme-key"), bolt = t.Client("bolt-key");
  const char claim[] = R"({"region":"weur","pool":"chrome","idempotency_key":"%"})";
  auto body = [&](const std::string& key) {
    std::string b = claim;
    return b.replace(b.find('%'), 1, key);
  };
  // The burst is the rate: two at once, then refused.
  CHECK(acme.Post("/v1/sessions", body("a1")).status == 201);
  CHECK(acme.Post("/v1/sessions", body("a2")).status == 201);
  HttpReply r = acme.Post("/v1/sessions", body("a3"));
  REQUIRE(r.status == 429);
  CHECK(r.ErrorCode() == "rate_limited");
  CHECK(r.Header("retry-after") == "1");
  CHECK(r.Header("content-type") == "application/json");
  CHECK_THAT(Json(r)["error"]["message"].get<std::string>(), Catch::Contains("2 claims a second"));
  // Another tenant is not touched by acme's rate.
  for (int i = 0; i < 2; ++i) CHECK(bolt.Post("/v1/sessions", body("b" + std::to_string(i))).status == 201);
  // Refilled at 2 a second: a claim again after half a second and more.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(acme.Post("/v1/sessions", body("a4")).status == 201);
  // An idempotent replay gives its token back: retrying a claimed key does
  // not use up the rate (one token is left here).
  for (int i = 0; i < 4; ++i) {
    HttpReply replay = acme.Post("/v1/sessions", body("a4"));
    CHECK(replay.status == 201);
    CHECK(replay.Header("idempotent-replayed") == "true");
  }
  CHECK(acme.Post("/v1/sessions", body("a5")).status == 201);
  CHECK(acme.Post("/v1/sessions", body("a6")).status == 429);
}

// The value of a /metrics series (name with its labels), or -1 if absent.
double SeriesValue(const std::string& metrics, const std::string& series) {
  const size_t at = metrics.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + series.size() + 2));
}

TEST_CASE("routes: per-tenant metrics name the keys file's tenants only") {
  TestService t("adm admin\nacme-key tenant acme claims_per_s=1\nbolt-key tenant bolt\n"
                "scrape metrics\n");
  HttpClient admin = t.Client("adm"), acme = t.Client("acme-key");
  REQUIRE(admin.Post("/v1/containers", kSixFleet).status == 200);
  const char claim[] = R"({"region":"weur","pool":"chrome"})";
  CHECK(acme.Post("/v1/sessions", claim).status == 201);
  CHECK(acme.Post("/v1/sessions", claim).status == 429);
  CHECK(admin.Post("/v1/sessions", claim).status == 201);  // tenant default
  CHECK(admin.Get("/v1/sessions?tenant=made-up").status == 200);
  const std::string m = t.Client("scrape").Get("/metrics").body;
  CHECK(SeriesValue(m, R"(edgealloc_tenant_claims_rate_limited_total{tenant="acme"})") == 1);
  CHECK(SeriesValue(m, R"(edgealloc_tenant_claims_rate_limited_total{tenant="bolt"})") == 0);
  CHECK(SeriesValue(m, R"(edgealloc_tenant_claim_waiters{tenant="acme"})") == 0);
  CHECK(m.find(R"(tenant="default")") == std::string::npos);
  CHECK(m.find("made-up") == std::string::npos);
  // Open mode has no tenants of its own: no per-tenant series at all.
  TestService open;
  CHECK(open.Client().Get("/metrics").body.find("edgealloc_tenant_") == std::string::npos);
}

TEST_CASE("routes: with a metrics key in the keys file /metrics asks for it (or an admin key)") {
  TestService t("adm admin\nacme-key tenant acme\nscrape metrics\n");
  CHECK(t.Client().Get("/metrics").status == 401);
  CHECK(t.Client("wrong").Get("/metrics").status == 401);
  CHECK(t.Client("acme-key").Get("/metrics").status == 403);
  HttpReply r = t.Client("scrape").Get("/metrics");
  CHECK(r.status == 200);
  CHECK(r.body.find("edgealloc_claims_total") != std::string::npos);
  CHECK(t.Client("adm").Get("/metrics").status == 200);
  // The scrape key reads what the dashboard reads, and nothing else.
  CHECK(t.Client("scrape").Get("/v1/capacity").status == 200);
  CHECK(t.Client("scrape").Get("/v1/capacity/history").status == 200);
  CHECK(t.Client("scrape").Get("/v1/limits").status == 403);
  CHECK(t.Client("scrape").Post("/v1/sessions", R"({"region":"weur"})").status == 403);
  CHECK(t.Client("scrape").Get("/v1/containers").status == 403);
  CHECK(t.Client().Get("/dashboard").status == 200);
  // Without a metrics key it stays open, keys or not.
  TestService plain("adm admin\nacme-key tenant acme\n");
  CHECK(plain.Client().Get("/metrics").status == 200);
}

// Every page of a list route, following next_cursor; the items of `field`.
std::vector<json> AllPages(HttpClient& c, const std::string& path, const std::string& field,
                           int* pages) {
  std::vector<json> items;
  std::string cursor;
  *pages = 0;
  for (;;) {
    const std::string sep = path.find('?') == std::string::npos ? "?" : "&";
    HttpReply r = c.Get(path + (cursor.empty() ? "" : sep + "cursor=" + cursor));
    INFO(r.body);
    REQUIRE(r.status == 200);
    const json body = Json(r);
    ++*pages;
    for (const auto& item : body[field]) items.push_back(item);
    if (body["next_cursor"].is_null()) return items;
    cursor = body["next_cursor"].get<std::string>();
  }
}

TEST_CASE("routes: GET /v1/sessions lists a tenant's own sessions with their labels, page by page") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  HttpClient admin = t.Client("adm");
  HttpClient acme = t.Client("acme-key");
  HttpClient bolt = t.Client("bolt-key");
  std::string fleet = R"({"containers":[)";
  for (int i = 0; i < 12; ++i) {
    fleet += (i ? "," : "") + std::string(R"({"id":"c-)") + std::to_string(i) +
             R"(","region":"weur","pool":"chrome"})";
  }
  REQUIRE(admin.Post("/v1/containers", fleet + "]}").status == 200);
  std::set<std::string> acme_ids;
  for (int i = 0; i < 5; ++i) {
    HttpReply r = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome",)"
                                            R"("labels":{"owner":"ci-)" +
                                                std::to_string(i % 2) + R"(","job":"build"}})");
    REQUIRE(r.status == 201);
    CHECK(Json(r)["labels"] == json::parse(R"({"owner":"ci-)" + std::to_string(i % 2) +
                                           R"(","job":"build"})"));
    acme_ids.insert(Json(r)["session_id"].get<std::string>());
  }
  HttpReply bolts = bolt.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(bolts.status == 201);
  CHECK(Json(bolts)["labels"] == json::object());  // none asked: an empty object

  int pages = 0;
  std::set<std::string> listed;
  for (const auto& s : AllPages(acme, "/v1/sessions?limit=2", "sessions", &pages)) {
    CHECK(listed.insert(s["session_id"].get<std::string>()).second);
    CHECK(s["labels"]["job"] == "build");
    CHECK(s["tenant"] == "acme");
  }
  CHECK(listed == acme_ids);
  CHECK(pages == 3);
  CHECK(AllPages(bolt, "/v1/sessions", "sessions", &pages).size() == 1);
  // An admin sees everyone's, each naming whose it is.
  std::map<std::string, int> by_tenant;
  for (const auto& s : AllPages(admin, "/v1/sessions?limit=4", "sessions", &pages)) {
    ++by_tenant[s["tenant"].get<std::string>()];
  }
  CHECK(by_tenant == std::map<std::string, int>{{"acme", 5}, {"bolt", 1}});
  CHECK(Json(bolt.Get("/v1/sessions/" + Json(bolts)["session_id"].get<std::string>()))["tenant"] ==
        "bolt");
  CHECK(AllPages(admin, "/v1/sessions?tenant=acme", "sessions", &pages).size() == 5);
  CHECK(AllPages(acme, "/v1/sessions?label=owner:ci-1", "sessions", &pages).size() == 2);
  CHECK(AllPages(acme, "/v1/sessions?label=owner:ci-9", "sessions", &pages).empty());
  CHECK(AllPages(acme, "/v1/sessions?region=weur&pool=chrome", "sessions", &pages).size() == 5);
  CHECK(AllPages(acme, "/v1/sessions?region=eeur", "sessions", &pages).empty());

  // A tenant names only itself.
  HttpReply r = acme.Get("/v1/sessions?tenant=bolt");
  CHECK(r.status == 403);
  CHECK(r.ErrorCode() == "forbidden");
  CHECK(acme.Get("/v1/sessions?tenant=acme").status == 200);
  CHECK(t.Client().Get("/v1/sessions").status == 401);

  // A released session is gone from the list.
  const json one = Json(bolts);
  REQUIRE(bolt.Delete("/v1/sessions/" + one["session_id"].get<std::string>() +
                      "?token=" + std::to_string(one["token"].get<int64_t>()))
              .status == 204);
  CHECK(AllPages(bolt, "/v1/sessions", "sessions", &pages).empty());
}

TEST_CASE("routes: GET /v1/sessions?state=ended lists a tenant's ended sessions newest first, "
          "with their end reasons, page by page") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  HttpClient admin = t.Client("adm");
  HttpClient acme = t.Client("acme-key");
  HttpClient bolt = t.Client("bolt-key");
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);
  std::vector<std::string> acme_ended;  // in the order they ended
  for (int i = 0; i < 3; ++i) {
    HttpReply r = acme.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
    REQUIRE(r.status == 201);
    const std::string id = Json(r)["session_id"];
    const int64_t token = Json(r)["token"];
    HttpClient& by = i == 1 ? admin : acme;
    REQUIRE(by.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token)).status == 204);
    acme_ended.push_back(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  HttpReply held = bolt.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
  REQUIRE(held.status == 201);

  int pages = 0;
  std::vector<std::string> listed;
  std::vector<std::string> reasons;
  for (const auto& s : AllPages(acme, "/v1/sessions?state=ended&limit=2", "sessions", &pages)) {
    listed.push_back(s["session_id"]);
    reasons.push_back(s["end_reason"]);
    CHECK(s["tenant"] == "acme");
    CHECK(s["ended_at_ms"].get<int64_t>() > 0);
  }
  CHECK(listed == std::vector<std::string>(acme_ended.rbegin(), acme_ended.rend()));
  CHECK(reasons == std::vector<std::string>{"released", "released_by_admin", "released"});
  CHECK(pages == 2);
  // Another tenant's history is not theirs; a live session is not ended.
  CHECK(AllPages(bolt, "/v1/sessions?state=ended", "sessions", &pages).empty());
  CHECK(AllPages(admin, "/v1/sessions?state=ended&tenant=acme", "sessions", &pages).size() == 3);
  CHECK(AllPages(acme, "/v1/sessions?state=live", "sessions", &pages).empty());
  CHECK(acme.Get("/v1/sessions?state=ended&tenant=bolt").status == 403);
  // A cursor of the live list is not one of the ended list.
  HttpReply live_page = admin.Get("/v1/sessions?limit=1");
  REQUIRE(live_page.status == 200);
  HttpReply ended_page = admin.Get("/v1/sessions?state=ended&limit=1");
  REQUIRE(ended_page.status == 200);
  const std::string cursor = Json(ended_page)["next_cursor"];
  CHECK(admin.Get("/v1/sessions?limit=1&cursor=" + cursor).status == 400);
  HttpReply bad = acme.Get("/v1/sessions?state=gone");
  CHECK(bad.status == 400);
  CHECK(bad.ErrorCode() == "invalid_field");
}

TEST_CASE("routes: a list page examines a bounded number of sessions: it may be empty yet carry "
          "next_cursor, and following it lists every match once") {
  TestService t("adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  HttpClient admin = t.Client("adm"), acme = t.Client("acme-key"), bolt = t.Client("bolt-key");
  std::string fleet = R"({"containers":[)";
  for (int i = 0; i < 1100; ++i) {
    fleet += (i ? "," : "") + std::string(R"({"id":"c-)") + std::to_string(i) +
             R"(","region":"weur","pool":"chrome"})";
  }
  REQUIRE(admin.Post("/v1/containers", fleet + "]}").status == 200);
  // 1,100 sessions of acme, more than a page examines (store::ListExamineBound).
  std::string rare;
  for (int i = 0; i < 1100; ++i) {
    HttpReply r = acme.Post("/v1/sessions", i == 700
                                                ? R"({"region":"weur","pool":"chrome","labels":{"kind":"rare"}})"
                                                : R"({"region":"weur","pool":"chrome"})");
    REQUIRE(r.status == 201);
    if (i == 700) rare = Json(r)["session_id"].get<std::string>();
  }
  // A filter that matches nothing: the first page stops at the bound, empty,
  // and says where to go on; the next ends the list.
  HttpReply r = acme.Get("/v1/sessions?label=kind:none&limit=10");
  REQUIRE(r.status == 200);
  CHECK(Json(r)["sessions"].empty());
  REQUIRE(Json(r)["next_cursor"].is_string());
  r = acme.Get("/v1/sessions?label=kind:none&limit=10&cursor=" +
               Json(r)["next_cursor"].get<std::string>());
  REQUIRE(r.status == 200);
  CHECK(Json(r)["sessions"].empty());
  CHECK(Json(r)["next_cursor"].is_null());
  int pages = 0;
  const auto found = AllPages(acme, "/v1/sessions?label=kind:rare&limit=10", "sessions", &pages);
  REQUIRE(found.size() == 1);
  CHECK(found[0]["session_id"] == rare);
  CHECK(pages == 2);
  // bolt's list reads bolt's sessions only: none, and no cursor.
  r = bolt.Get("/v1/sessions");
  REQUIRE(r.status == 200);
  CHECK(Json(r)["sessions"].empty());
  CHECK(Json(r)["next_cursor"].is_null());
  // Containers too: a status none has.
  CHECK(AllPages(admin, "/v1/containers?status=dead&limit=10", "containers", &pages).empty());
  CHECK(pages == 2);
}

TEST_CASE("routes: a list's limit, cursor and filters are checked, 400 invalid_field naming them") {
  TestService t;
  HttpClient c = t.Client();  // open mode: loopback is admin
  ExhaustFleet(c);
  for (const char* bad : {"limit=0", "limit=1001", "limit=x", "limit=-1", "cursor=abc",
                          "cursor=c1.zz", "label=nocolon", "label=:v",
                          // One label filter a request; a second was ignored.
                          "label=a:b&label=c:d"}) {
    INFO(bad);
    HttpReply r = c.Get(std::string("/v1/sessions?") + bad);
    CHECK(r.status == 400);
    CHECK(r.ErrorCode() == "invalid_field");
    CHECK(r.body.find(std::string(bad).substr(0, std::string(bad).find('='))) !=
          std::string::npos);
  }
  CHECK(c.Get("/v1/sessions?limit=1000").status == 200);
  CHECK(c.Get("/v1/containers?status=gone").status == 400);

  // A cursor from another query is refused, not followed.
  HttpReply first = c.Get("/v1/sessions?limit=1");
  REQUIRE(first.status == 200);
  const std::string cursor = Json(first)["next_cursor"].get<std::string>();
  CHECK(c.Get("/v1/sessions?limit=1&cursor=" + cursor).status == 200);
  CHECK(c.Get("/v1/sessions?limit=5&cursor=" + cursor).status == 200);  // the limit may change
  for (const std::string other :
       {"/v1/sessions?region=weur&cursor=", "/v1/sessions?tenant=x&cursor=",
        "/v1/sessions?label=a:b&cursor=", "/v1/containers?cursor="}) {
    INFO(other);
    HttpReply r = c.Get(other + cursor);
    CHECK(r.status == 400);
    CHECK(r.ErrorCode() == "invalid_field");
  }
}

TEST_CASE("routes: %00 in a query filter or an id is 400, never a 503 or another row") {
  // PostgreSQL text cannot hold NUL: a label filter with one made every such
  // list fail with 503 there, and libpq cuts a parameter at it (an id
  // "w-1%00x" would be read, or removed, as w-1). Refused on both engines.
  TestService t;
  HttpClient c = t.Client();  // open mode: loopback is admin
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  for (const char* bad : {"/v1/sessions?label=k:a%00b", "/v1/sessions?label=k%00:v",
                          "/v1/sessions?region=weur%00x", "/v1/sessions?pool=%00",
                          "/v1/sessions?tenant=a%00", "/v1/containers?region=weur%00",
                          "/v1/containers?pool=chrome%00", "/v1/limits?tenant=acme%00"}) {
    INFO(bad);
    HttpReply r = c.Get(bad);
    CHECK(r.status == 400);
    CHECK(r.ErrorCode() == "invalid_field");
    CHECK(r.body.find("U+0000") != std::string::npos);
  }
  for (const char* bad : {"/v1/containers/w-1%00x", "/v1/sessions/s_1%00"}) {
    INFO(bad);
    HttpReply r = c.Get(bad);
    CHECK(r.status == 400);
    CHECK(r.ErrorCode() == "bad_request");
  }
  CHECK(c.Delete("/v1/containers/w-1%00x").status == 400);
  CHECK(c.Get("/v1/containers/w-1").status == 200);
}

TEST_CASE("routes: a label with U+0000 is 400 on both engines, and label lists keep working") {
  // On PostgreSQL such a label was taken (201) and then made every
  // label-filtered list fail with 503 (labels::jsonb cannot hold \u0000).
  const std::string engine = EDGEALLOC_ENGINES;
  INFO(engine);
  fixture::LiveService t([&engine](ServeConfig* c) {
    if (engine == "postgres") c->db = testing::SharedPg().NewDatabaseUri();
  });
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  HttpReply r = c.Post("/v1/sessions",
                       R"({"region":"weur","pool":"chrome","labels":{"k":"a\u0000b"}})");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_field");
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","labels":{"k":"v"}})")
              .status == 201);
  r = c.Get("/v1/sessions?label=k:v");
  REQUIRE(r.status == 200);
  CHECK(Json(r)["sessions"].size() == 1);
  r = c.Get("/v1/sessions?label=k:a%00b");
  CHECK(r.status == 400);
  CHECK(r.ErrorCode() == "invalid_field");
}

TEST_CASE("routes: a read failing in storage is 503 with the request id, never the driver's text") {
  fixture::StorageDouble* storage = nullptr;
  fixture::LiveService t({}, "", [&storage](std::unique_ptr<store::Storage> real) {
    auto d = std::make_unique<fixture::StorageDouble>(std::move(real));
    storage = d.get();
    return std::unique_ptr<store::Storage>(std::move(d));
  });
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  storage->FailReads(
      "connection to server at \"db-7.internal\" (10.1.2.3), port 5433 failed: timeout expired");
  for (const char* target : {"/v1/sessions/s_1", "/v1/sessions", "/v1/sessions?label=a:b",
                             "/v1/limits?tenant=acme", "/v1/containers/w-1", "/v1/containers"}) {
    INFO(target);
    HttpReply r = c.Request("GET", target, "", {{"X-Request-Id", "probe-1"}});
    CHECK(r.status == 503);
    CHECK(r.ErrorCode() == "unavailable");
    CHECK(r.Header("retry-after") == "1");
    CHECK(r.body.find("db-7") == std::string::npos);  // before the fix: libpq's text
    CHECK(r.body.find("5433") == std::string::npos);
    CHECK(r.body.find("probe-1") != std::string::npos);
  }
}

TEST_CASE("routes: GET /v1/containers is for admins, filtered by region, pool and status") {
  TestService t("adm admin\nacme-key tenant acme\n");
  HttpClient admin = t.Client("adm");
  REQUIRE(admin.Post("/v1/containers", kFleet).status == 200);
  REQUIRE(admin.Post("/v1/containers",
                     R"({"containers":[{"id":"e-1","region":"eeur","pool":"firefox"}]})")
              .status == 200);
  REQUIRE(t.Client("acme-key").Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})")
              .status == 201);
  CHECK(t.Client("acme-key").Get("/v1/containers").status == 403);
  int pages = 0;
  auto all = AllPages(admin, "/v1/containers?limit=1", "containers", &pages);
  REQUIRE(all.size() == 3);
  CHECK(pages == 3);
  CHECK(all[0]["id"] == "e-1");  // in id order
  CHECK(all[1]["id"] == "w-1");
  CHECK(all[2]["id"] == "w-2");
  auto picked = AllPages(admin, "/v1/containers?status=picked", "containers", &pages);
  REQUIRE(picked.size() == 1);
  CHECK(picked[0]["region"] == "weur");
  CHECK(picked[0].contains("session_id"));
  CHECK(AllPages(admin, "/v1/containers?region=eeur&pool=firefox", "containers", &pages).size() ==
        1);
  CHECK(AllPages(admin, "/v1/containers?region=eeur&pool=chrome", "containers", &pages).empty());
}


// The value of a /metrics sample line starting with `series` + " ", or -1.
double MetricValue(HttpClient& c, const std::string& series) {
  const std::string text = c.Get("/metrics").body;
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return -1;
}

// Waits (at most 10 s) for a metric of the service to read `want`.
bool MetricBecomes(HttpClient& c, const std::string& series, double want) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (MetricValue(c, series) != want) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST_CASE("routes: a claim with wait_ms is served by a release, a client that hangs up claims nothing") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  const json a = Json(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})"));
  const json b = Json(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})"));
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":30001})").status ==
        400);
  CHECK(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":-1})").status == 400);

  // A client asks to wait, then hangs up.
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), t.service->port()});
    const std::string body = R"({"region":"weur","pool":"chrome","wait_ms":20000})";
    const std::string request = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(socket, boost::asio::buffer(request));
    REQUIRE(MetricBecomes(c, "edgealloc_claim_waiters", 1));
  }  // closed
  REQUIRE(MetricBecomes(c, "edgealloc_claim_waits_total{result=\"abandoned\"}", 1));
  CHECK(MetricValue(c, "edgealloc_claim_waiters") == 0);
  REQUIRE(c.Delete("/v1/sessions/" + a["session_id"].get<std::string>() +
                   "?token=" + std::to_string(a["token"].get<int64_t>()))
              .status == 204);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(Json(c.Get("/v1/containers/" + a["container_id"].get<std::string>()))["status"] ==
        "available");

  // A client that stays is served by the next release.
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  auto waiting = std::async(std::launch::async, [&] {
    return t.Client().Post("/v1/sessions",
                           R"({"region":"weur","pool":"chrome","wait_ms":20000,)"
                           R"("labels":{"who":"waiter"}})");
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (MetricValue(c, "edgealloc_claim_waiters") != 1 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(c.Delete("/v1/sessions/" + b["session_id"].get<std::string>() +
                   "?token=" + std::to_string(b["token"].get<int64_t>()))
              .status == 204);
  HttpReply served = waiting.get();
  INFO(served.body);
  REQUIRE(served.status == 201);
  CHECK(Json(served)["container_id"] == b["container_id"]);
  CHECK(Json(served)["labels"]["who"] == "waiter");
  CHECK(MetricValue(c, "edgealloc_claim_waits_total{result=\"served\"}") == 1);

  // Nothing left: a short wait ends in 503 no_capacity with Retry-After.
  HttpReply timed_out =
      c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":100})");
  CHECK(timed_out.status == 503);
  CHECK(timed_out.ErrorCode() == "no_capacity");
  CHECK(!timed_out.Header("retry-after").empty());
}

// At SIGTERM a waiting claim is answered 503 at once, and the stop does not
// wait the grace period out for it.
TEST_CASE("routes: a waiting claim is answered 503 at once when the server stops") {
  TestService t;
  HttpClient c = t.Client();
  ExhaustFleet(c);
  auto waiting = std::async(std::launch::async, [&] {
    return t.Client().Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":20000})");
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (MetricValue(c, "edgealloc_claim_waiters") != 1 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(MetricValue(c, "edgealloc_claim_waiters") == 1);
  const auto t0 = std::chrono::steady_clock::now();
  t.service->Stop(std::chrono::seconds(15));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  HttpReply answered = waiting.get();
  CHECK(answered.status == 503);
}

TEST_CASE("routes: a claim with wait_ms is served by a heartbeat bringing a container back") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  // w-2 drains (nothing may claim it), w-1 is taken: the pool has nothing to give.
  REQUIRE(c.Post("/v1/heartbeats",
                 R"({"heartbeats":[{"container_id":"w-2","state":"draining"}]})")
              .status == 202);
  REQUIRE(fixture::Eventually(
      [&] { return Json(c.Get("/v1/containers/w-2"))["status"] == "draining"; },
      std::chrono::seconds(10)));
  const json held = Json(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})"));
  REQUIRE(held["container_id"] == "w-1");

  auto waiting = std::async(std::launch::async, [&] {
    return t.Client().Post("/v1/sessions",
                           R"({"region":"weur","pool":"chrome","wait_ms":20000})");
  });
  REQUIRE(fixture::Eventually([&] { return MetricValue(c, "edgealloc_claim_waiters") == 1; },
                              std::chrono::seconds(10)));
  // No release anywhere: only the heartbeat makes w-2 claimable again.
  REQUIRE(c.Post("/v1/heartbeats",
                 R"({"heartbeats":[{"container_id":"w-2","state":"ready"}]})")
              .status == 202);
  HttpReply served = waiting.get();
  INFO(served.body);
  REQUIRE(served.status == 201);
  CHECK(Json(served)["container_id"] == "w-2");
  CHECK(MetricValue(c, "edgealloc_claim_waits_total{result=\"served\"}") == 1);
}

}  // namespace
}  // namespace server

namespace server {

namespace {

// A raw connection that sent a waiting claim for weur/chrome.
struct WaitingClaimSocket {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket{io};
  explicit WaitingClaimSocket(uint16_t port) {
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string body = R"({"region":"weur","pool":"chrome","wait_ms":20000})";
    const std::string request = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(socket, boost::asio::buffer(request));
  }
  // Everything the server sends until it closes (or 10 s pass).
  std::string ReadAll() {
    std::string all;
    char chunk[4096];
    timeval tv{10, 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
      const ssize_t n = ::recv(socket.native_handle(), chunk, sizeof chunk, 0);
      if (n <= 0) return all;
      all.append(chunk, static_cast<size_t>(n));
    }
  }
};

}  // namespace

// Issue: the watch of a waiting claim's connection peeked once: a client
// that sent one more byte and then closed was never seen to leave, and a
// container was later claimed, with its lease, for nobody.
TEST_CASE("routes: a waiting claim whose client pipelined bytes and then closed is abandoned") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  while (c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201) {
  }
  {
    WaitingClaimSocket waiting(t.service->port());
    REQUIRE(MetricBecomes(c, "edgealloc_claim_waiters", 1));
    // Sent once the request was read: it reaches the socket, not the parser.
    boost::asio::write(waiting.socket, boost::asio::buffer(std::string("G")));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(MetricValue(c, "edgealloc_claim_waits_total{result=\"abandoned\"}") == 0);
  }  // closed
  CHECK(MetricBecomes(c, "edgealloc_claim_waits_total{result=\"abandoned\"}", 1));
  CHECK(MetricValue(c, "edgealloc_claim_waiters") == 0);
}

// Issue: a client that shut only its sending side after its request (HTTP
// lets it: it still reads the answer) was taken as gone and answered 503.
TEST_CASE("routes: a waiting claim whose client half-closed still gets its answer") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  json held;
  for (;;) {
    HttpReply r = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
    if (r.status != 201) break;
    held = Json(r);
  }
  WaitingClaimSocket waiting(t.service->port());
  REQUIRE(MetricBecomes(c, "edgealloc_claim_waiters", 1));
  waiting.socket.shutdown(boost::asio::ip::tcp::socket::shutdown_send);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(MetricValue(c, "edgealloc_claim_waiters") == 1);
  CHECK(MetricValue(c, "edgealloc_claim_waits_total{result=\"abandoned\"}") == 0);
  REQUIRE(c.Delete("/v1/sessions/" + held["session_id"].get<std::string>() +
                   "?token=" + std::to_string(held["token"].get<int64_t>()))
              .status == 204);
  const std::string answer = waiting.ReadAll();
  INFO(answer);
  // An interim 100 (how the server told a half-close from a close), then the
  // session.
  CHECK(answer.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
  CHECK(answer.find("HTTP/1.1 201") != std::string::npos);
  CHECK(answer.find(held["container_id"].get<std::string>()) != std::string::npos);
}

// A claim for a region and pool nobody registered never waits: 404
// unknown_pool at once, whatever its wait_ms, naming the region's pools.
TEST_CASE("routes: a waiting claim for a pool nobody registered is answered at once") {
  TestService t;
  HttpClient c = t.Client();
  REQUIRE(c.Post("/v1/containers", kFleet).status == 200);
  const auto t0 = std::chrono::steady_clock::now();
  HttpReply r = c.Post("/v1/sessions",
                       R"({"region":"made-up","pool":"chrome","wait_ms":20000,)"
                       R"("fallback_regions":["made-up-2"]})");
  CHECK(r.status == 404);
  CHECK(r.ErrorCode() == "unknown_pool");
  CHECK_THAT(r.body, Catch::Contains("registered"));
  CHECK(r.Header("retry-after").empty());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK(MetricValue(c, "edgealloc_claim_waits_total{result=\"unregistered\"}") == 1);
}

}  // namespace server
