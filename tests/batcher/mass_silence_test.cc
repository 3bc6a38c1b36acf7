#include "batcher/mass_silence.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "batcher/batcher.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/eventually.h"

namespace {

using batcher::LiveByPool;
using batcher::MassSilence;
using batcher::PoolKey;
using std::chrono::milliseconds;

TEST_CASE("mass silence: most of a pool silent at once holds it until none of it is silent") {
  std::vector<std::string> lines;
  MassSilence m(0.5, 60000, [&](const std::string& line) { lines.push_back(line); });
  const LiveByPool live = {{{"weur", "chrome"}, 10}, {{"eeur", "chrome"}, 10}};
  // Half is not more than half; two of a small pool is not a mass.
  CHECK(m.Update({{"weur", "chrome", 5}, {"eeur", "chrome", 2}}, live).empty());
  const std::vector<PoolKey> held = m.Update({{"weur", "chrome", 6}, {"eeur", "chrome", 2}}, live);
  REQUIRE(held == std::vector<PoolKey>{{"weur", "chrome"}});
  CHECK(m.held_pools() == 1);
  CHECK(m.episodes() == 1);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("weur/chrome 6 of 10 containers silent") != std::string::npos);
  // Held while any of it is silent, even a minority (the free ones died).
  CHECK(m.Update({{"weur", "chrome", 2}}, {{{"weur", "chrome"}, 3}}).size() == 1);
  CHECK(m.Update({}, live).empty());
  CHECK(m.held_pools() == 0);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].find("mass silence over: weur/chrome") != std::string::npos);
}

TEST_CASE("mass silence: most of the fleet silent holds every pool with a silent container") {
  MassSilence m(0.5, 60000, nullptr);
  LiveByPool live;
  std::vector<store::PoolSilence> silent;
  for (int i = 0; i < 10; ++i) {
    live[{"r" + std::to_string(i), "p"}] = 4;
    silent.push_back({"r" + std::to_string(i), "p", 2 + (i % 2)});  // 25 of 40
  }
  CHECK(m.Update(silent, live).size() == 10);
}

store::Session Claim(store::Storage* s) {
  store::ClaimRequest req;
  req.region = "weur";
  req.pool = "chrome";
  req.lease_ms = 600000;
  auto r = testing::Await<store::SessionResult>([&](auto cb) { s->Claim(req, cb); });
  REQUIRE(r.outcome == store::Outcome::kOk);
  return r.session;
}

bool WaitFor(const std::function<bool()>& done, milliseconds limit) {
  return testing::Eventually(done, limit);
}

// The whole pool goes silent at once: its free containers are dead as ever
// (not handed out), but the sessions it holds end only after the grace.
TEST_CASE("mass silence: a pool silent at once keeps its sessions for the grace, then ends them") {
  testing::Engine engine(EDGEALLOC_ENGINES, store::ClaimPolicy{}, 1);
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 6; ++i)
    specs.push_back({"c-" + std::to_string(i), "weur", "chrome", 0, "{}", 1, {}});
  auto reg = testing::Await<store::ContainerResult>([&](auto cb) { engine->Register(specs, cb); });
  REQUIRE(reg.outcome == store::Outcome::kOk);
  const store::Session a = Claim(engine.storage.get());
  const store::Session b = Claim(engine.storage.get());

  batcher::BatcherOptions options;
  options.dead_after_ms = 300;
  options.reaper_interval_ms = 10;
  options.mass_silence_grace_ms = 2500;
  options.live_by_pool = [] { return LiveByPool{{{"weur", "chrome"}, 6}}; };
  batcher::Batcher batcher(engine.storage.get(), options);
  batcher.Start();
  const auto t0 = std::chrono::steady_clock::now();
  // Nobody reports: the four free containers die once silent...
  const auto status = [&](const std::string& id) {
    return engine->GetContainer(id).container.status;
  };
  REQUIRE(WaitFor([&] { return batcher.stats().dead_marked.load() == 4; }, milliseconds(10000)));
  // ...while the two held ones keep their sessions.
  CHECK(batcher.mass_silence().held_pools() == 1);
  CHECK(status(a.container_id) == "picked");
  CHECK(status(b.container_id) == "picked");
  CHECK(batcher.stats().sessions_ended.load() == 0);
  // Past the grace, they end.
  REQUIRE(WaitFor([&] { return batcher.stats().sessions_ended.load() == 2; }, milliseconds(10000)));
  CHECK(std::chrono::steady_clock::now() - t0 >= milliseconds(2000));
  CHECK(status(a.container_id) == "dead");
  REQUIRE(WaitFor([&] { return batcher.mass_silence().held_pools() == 0; }, milliseconds(5000)));
  batcher.Stop();
  engine->StopWriters();
}

}  // namespace
