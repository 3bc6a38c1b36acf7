#include "server/service.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite/db.h"
#include "tests/server/service_fixture.h"
#include "tests/server/storage_double.h"

namespace {

using server::fixture::LiveService;
using server::fixture::Eventually;
using server::fixture::RegisterFleet;
using server::fixture::StorageDouble;

// A LiveService with a StorageDouble around its storage, and
// --request-deadline-ms 300.
struct ForgetfulService {
  ForgetfulService()
      : live([](server::ServeConfig* c) { c->request_deadline_ms = 300; }, "",
             [this](std::unique_ptr<store::Storage> real) {
               auto d = std::make_unique<StorageDouble>(std::move(real));
               storage = d.get();
               return std::unique_ptr<store::Storage>(std::move(d));
             }) {}
  StorageDouble* storage = nullptr;  // set before `live` starts serving
  LiveService live;
};

// The value of a /metrics series without labels, or -1 if absent.
double MetricValue(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name.size() + 2));
}

// Issue #11, defect 8: on SIGTERM every request read is answered, or not
// committed. A claim still waiting for the write lock (another process holds
// it) when the grace period ends is committed while the writers drain; its
// reply must still reach the client before the io threads stop.
TEST_CASE("service: a claim committed while stopping after the grace period is still answered") {
  LiveService live;
  auto admin = live.Client();
  constexpr int kClaims = 64;
  RegisterFleet(admin, "c", kClaims);
  // Another process's open write transaction: the shard's writer waits for it.
  std::unique_ptr<store::Db> other;
  store::DbOptions options;
  options.program = "edgealloc test";
  REQUIRE(store::Db::Open(live.config.db, options, &other).ok());
  auto txn = std::make_unique<store::Transaction>(other.get());
  REQUIRE(txn->Begin().ok());

  // Many at once, so that many replies are posted in the same instant the
  // drain ends.
  std::vector<std::future<testing::HttpReply>> claims;
  for (int i = 0; i < kClaims; ++i) {
    claims.push_back(std::async(std::launch::async, [&] {
      auto c = live.Client();
      return c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})");
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the claims wait in the writer
  auto stop = std::async(std::launch::async,
                         [&] { live.service->Stop(std::chrono::milliseconds(100)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the grace period
  txn.reset();  // the other process lets go: the claim commits during the drain
  stop.get();

  std::vector<std::string> sessions;
  for (auto& claim : claims) {
    testing::HttpReply reply;
    REQUIRE_NOTHROW(reply = claim.get());  // an answer, not a closed connection
    INFO(reply.status << " " << reply.body);
    REQUIRE(reply.status == 201);
    sessions.push_back(nlohmann::json::parse(reply.body)["session_id"].get<std::string>());
  }
  other.reset();
  live.Restart();
  auto again = live.Client();
  for (const std::string& id : sessions) CHECK(again.Get("/v1/sessions/" + id).status == 200);
}

// A store whose answer to a claim never comes (a lost callback, a wedged
// writer) held the client's connection for ever: now it is answered 503 at
// the deadline, the answer that comes late is dropped, and the client's
// keyed retry finds the claim the store did make.
TEST_CASE("service: a claim whose store answer is lost is 503 unavailable at --request-deadline-ms") {
  ForgetfulService t;
  auto c = t.live.Client();
  c.set_timeout(std::chrono::seconds(10));  // a hang fails, not waits for ctest
  RegisterFleet(c, "c", 2);
  t.storage->HoldClaimAnswers();
  const std::string keyed = R"({"region":"weur","pool":"chrome","idempotency_key":"k-1"})";
  testing::HttpReply r = c.Post("/v1/sessions", keyed);
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "unavailable");
  CHECK(r.Header("retry-after") == "1");
  REQUIRE(Eventually([&] { return t.storage->held_claims() == 1; }));
  CHECK(MetricValue(c.Get("/metrics").body, "edgealloc_http_request_deadlines_total") == 1);

  t.storage->DeliverHeldClaims();  // the lost answer comes after all: it goes nowhere
  r = c.Get("/healthz");
  CHECK(r.status == 200);
  r = c.Post("/v1/sessions", keyed);
  INFO(r.body);
  CHECK(r.status == 201);
  CHECK(r.Header("idempotent-replayed") == "true");
  CHECK(MetricValue(c.Get("/metrics").body, "edgealloc_http_request_deadlines_total") == 1);
}

TEST_CASE("service: a waiting claim's deadline counts from the end of its wait_ms") {
  ForgetfulService t;
  auto c = t.live.Client();
  c.set_timeout(std::chrono::seconds(10));
  RegisterFleet(c, "c", 1);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  // Nothing frees up: answered no_capacity at the wait's end, not cut at 300 ms.
  testing::HttpReply r =
      c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","wait_ms":1000})");
  INFO(r.body);
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "no_capacity");
  CHECK(MetricValue(c.Get("/metrics").body, "edgealloc_http_request_deadlines_total") == 0);
}

}  // namespace
