#ifndef EDGEALLOC_TESTS_SERVER_SERVICE_FIXTURE_H_
#define EDGEALLOC_TESTS_SERVER_SERVICE_FIXTURE_H_

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "server/service.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace fixture {

// Keys for the role tests: one of each role.
inline constexpr char kKeys[] =
    "admin-key admin\n"
    "tenant-key tenant acme\n"
    "container-key container\n";

// A real edgealloc on 127.0.0.1, a free port and a fresh database in a temp
// folder. `tune` adjusts the config before Start; Restart() serves the same
// database again (after Stop), to see what reached the file. `wrap`, when
// set, puts a double around the storage (storage_double.h).
struct LiveService {
  explicit LiveService(const std::function<void(ServeConfig*)>& tune = {},
                       const std::string& keys = "", Service::StorageWrap wrap = {})
      : wrap(std::move(wrap)) {
    config.db = dir.File("alloc.db");
    config.host = "127.0.0.1";
    config.port = 0;
    config.threads = 2;
    config.max_lease_ms = 600000;
    config.mirror_refresh_ms = 50;
    if (!keys.empty()) {
      std::ofstream(dir.File("keys")) << keys;
      config.keys_file = dir.File("keys");
    }
    if (tune) tune(&config);
    Restart();
  }
  void Restart() {
    service.reset();
    service = std::make_unique<Service>(config, wrap);
    store::Status s = service->Start();
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  testing::HttpClient Client(const std::string& key = "") {
    return testing::HttpClient(service->port(), key);
  }

  testing::TempDir dir;
  Service::StorageWrap wrap;
  ServeConfig config;
  std::unique_ptr<Service> service;
};

// Registers containers "<prefix>-0".."<prefix>-<n-1>" in region weur, pool chrome.
inline void RegisterFleet(testing::HttpClient& c, const std::string& prefix, int n) {
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    list.push_back({{"id", prefix + "-" + std::to_string(i)}, {"region", "weur"}, {"pool", "chrome"}});
  }
  testing::HttpReply r = c.Post("/v1/containers", nlohmann::json{{"containers", list}}.dump());
  REQUIRE(r.status == 200);
}

// The value of a /metrics sample line starting with `series` + " ", or -1.
inline double MetricValue(testing::HttpClient& c, const std::string& series) {
  const std::string text = c.Get("/metrics").body;
  for (size_t at = 0; (at = text.find(series + " ", at)) != std::string::npos;
       at += series.size()) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
  }
  return -1;
}

// Polls `done` every 10 ms for at most `timeout`; true once it held.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace fixture
}  // namespace server

#endif  // EDGEALLOC_TESTS_SERVER_SERVICE_FIXTURE_H_
