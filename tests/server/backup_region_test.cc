// --backup-region and --max-heartbeat-lag-ms on a live server: the flags
// and the config file's table (cycles refused at start), the 201's region
// and served_by while a region's heartbeat writes are held back, the
// series of /metrics and GET /v1/capacity/regions (the dashboard's).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "server/config.h"
#include "tests/server/service_fixture.h"
#include "tests/support/forwarding_storage.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace {

using fixture::Eventually;
using fixture::LiveService;
using fixture::MetricValue;
using nlohmann::json;

Command ParseServe(std::vector<const char*> args, std::string* err) {
  args.insert(args.begin(), {"edgealloc", "serve"});
  std::ostringstream out, errs;
  Command cmd = ParseCommandLine(static_cast<int>(args.size()), args.data(), out, errs);
  *err = errs.str();
  return cmd;
}

// Heartbeat writes wait while held (a shard whose writer stalled).
class HeldHeartbeats : public testing::ForwardingStorage {
 public:
  explicit HeldHeartbeats(std::unique_ptr<store::Storage> real)
      : ForwardingStorage(real.get()), real_(std::move(real)) {}
  ~HeldHeartbeats() override { Hold(false); }
  void Hold(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = hold;
    cv_.notify_all();
  }
  store::Status WriteHeartbeats(int partition, const std::vector<store::HeartbeatRow>& rows,
                                store::HeartbeatWriteResult* result) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !held_; });
    }
    return ForwardingStorage::WriteHeartbeats(partition, rows, result);
  }

 private:
  std::unique_ptr<store::Storage> real_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
};

}  // namespace

TEST_CASE("backup region flags: pairs from flags and the config file's table, and cycles refused") {
  std::string err;
  Command cmd = ParseServe({"--backup-region", "weur=eeur", "--backup-region", "wnam=enam,x=y"},
                           &err);
  INFO(err);
  REQUIRE(cmd.kind == Command::Kind::kServe);
  CHECK(cmd.serve.backup_regions ==
        std::map<std::string, std::string>{{"weur", "eeur"}, {"wnam", "enam"}, {"x", "y"}});
  CHECK(cmd.serve.max_heartbeat_lag_ms == 2000);

  cmd = ParseServe({"--backup-region", "a=b", "--backup-region", "b=a"}, &err);
  CHECK(cmd.exit_code == 2);
  CHECK_THAT(err, Catch::Contains("cycle (a -> b -> a)"));
  cmd = ParseServe({"--backup-region", "a=b,b=c,c=a"}, &err);
  CHECK(cmd.exit_code == 2);
  CHECK_THAT(err, Catch::Contains("cycle (a -> b -> c -> a)"));
  cmd = ParseServe({"--backup-region", "a"}, &err);
  CHECK(cmd.exit_code == 2);
  CHECK_THAT(err, Catch::Contains("--backup-region: 'a' is not REGION=BACKUP"));

  testing::TempDir dir;
  const std::string file = dir.File("edgealloc.toml");
  std::ofstream(file) << "[serve]\nmax-heartbeat-lag-ms = 500\n"
                         "[serve.backup-region]\nweur = \"eeur\"\neeur = \"enam\"\n";
  cmd = ParseServe({"--config", file.c_str()}, &err);
  INFO(err);
  REQUIRE(cmd.kind == Command::Kind::kServe);
  CHECK(cmd.serve.backup_regions ==
        std::map<std::string, std::string>{{"weur", "eeur"}, {"eeur", "enam"}});
  CHECK(cmd.serve.max_heartbeat_lag_ms == 500);
  std::ofstream(file) << "[serve.backup-region]\nweur = \"eeur\"\neeur = \"weur\"\n";
  cmd = ParseServe({"--config", file.c_str()}, &err);
  CHECK(cmd.exit_code == 2);
  CHECK_THAT(err, Catch::Contains("cycle (eeur -> weur -> eeur)"));
}

TEST_CASE("backup region: the 201 says the backup served while home's heartbeats lag, "
          "/metrics and /v1/capacity/regions say so, and claims come home after") {
  HeldHeartbeats* held = nullptr;
  LiveService live(
      [](ServeConfig* c) {
        c->backup_regions = {{"home", "bk"}};
        c->max_heartbeat_lag_ms = 200;
      },
      "", [&held](std::unique_ptr<store::Storage> real) -> std::unique_ptr<store::Storage> {
        auto wrapped = std::make_unique<HeldHeartbeats>(std::move(real));
        held = wrapped.get();
        return wrapped;
      });
  testing::HttpClient c = live.Client();
  json list = json::array({{{"id", "home-0"}, {"region", "home"}},
                           {{"id", "bk-0"}, {"region", "bk"}}});
  REQUIRE(c.Post("/v1/containers", json{{"containers", list}}.dump()).status == 200);
  const auto claim = [&c] {
    testing::HttpReply r = c.Post("/v1/sessions", R"({"region":"home","lease_ms":60000})");
    INFO(r.body);
    REQUIRE(r.status == 201);
    json body = json::parse(r.body);
    REQUIRE(c.Delete("/v1/sessions/" + body["session_id"].get<std::string>() +
                     "?token=" + std::to_string(body["token"].get<int64_t>()))
                .status == 204);
    return body;
  };
  json s = claim();
  CHECK(s["region"] == "home");
  CHECK(s["served_by"] == "home");

  held->Hold(true);
  REQUIRE(c.Post("/v1/heartbeats",
                 R"({"heartbeats":[{"container_id":"home-0","state":"draining"}]})")
              .status == 202);
  REQUIRE(Eventually([&] {
    return MetricValue(c, "edgealloc_heartbeat_lag_seconds{region=\"home\"}") > 0.2;
  }));
  s = claim();
  CHECK(s["region"] == "bk");
  CHECK(s["container_id"] == "bk-0");
  CHECK(s["served_by"] == "backup");
  CHECK(Eventually([&] {
    return MetricValue(c, "edgealloc_region_on_backup{region=\"home\",backup=\"bk\"}") == 1;
  }));
  CHECK(MetricValue(c, "edgealloc_claims_served_total{served_by=\"backup\"}") == 1);
  json regions = json::parse(c.Get("/v1/capacity/regions").body);
  CHECK(regions["max_heartbeat_lag_ms"] == 200);
  bool home_on_backup = false;
  for (const auto& r : regions["regions"]) {
    if (r["region"] == "home") home_on_backup = r["on_backup"] == true && r["backup"] == "bk";
  }
  CHECK(home_on_backup);

  held->Hold(false);
  REQUIRE(Eventually([&] {
    return MetricValue(c, "edgealloc_region_on_backup{region=\"home\",backup=\"bk\"}") == 0;
  }));
  // home-0's report is written now: it drains, so home has nothing; a new one serves.
  REQUIRE(c.Post("/v1/containers",
                 json{{"containers", json::array({{{"id", "home-1"}, {"region", "home"}}})}}.dump())
              .status == 200);
  s = claim();
  CHECK(s["container_id"] == "home-1");
  CHECK(s["served_by"] == "home");
  CHECK(MetricValue(c, "edgealloc_claims_served_total{served_by=\"home\"}") == 2);
}

}  // namespace server
