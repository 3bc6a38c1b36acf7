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

namespace {

using server::fixture::LiveService;
using server::fixture::RegisterFleet;

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

}  // namespace
