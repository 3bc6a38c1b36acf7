#include "batcher/mass_silence.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "batcher/batcher.h"
#include "tests/store/report_now.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_storage.h"

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

// Six containers of weur/chrome, two of them holding a session (returned),
// every one heard from just now, at one instant: the silence starts here,
// however long the set-up took on a loaded machine, and for all six at once
// (reported one by one, a count could fall between their times and see no
// mass).
std::vector<store::Session> HeldPool(store::Storage* s) {
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 6; ++i)
    specs.push_back({"c-" + std::to_string(i), "weur", "chrome", 0, "{}", 1, {}});
  auto reg = testing::Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); });
  REQUIRE(reg.outcome == store::Outcome::kOk);
  std::vector<store::Session> held = {Claim(s), Claim(s)};
  std::vector<std::string> ids;
  for (const auto& spec : specs) ids.push_back(spec.id);
  testing::ReportAllNow(s, ids, store::ReportedState::kReady);
  return held;
}

batcher::BatcherOptions HeldPoolOptions(int64_t grace_ms) {
  batcher::BatcherOptions options;
  options.dead_after_ms = 300;
  options.reaper_interval_ms = 10;
  options.mass_silence_grace_ms = grace_ms;
  options.live_by_pool = [] { return LiveByPool{{{"weur", "chrome"}, 6}}; };
  return options;
}

// The whole pool goes silent at once: its free containers are dead as ever
// (not handed out), but the sessions it holds end only after the grace.
TEST_CASE("mass silence: a pool silent at once keeps its sessions for the grace, then ends them") {
  testing::Engine engine(EDGEALLOC_ENGINES, store::ClaimPolicy{}, 1);
  const std::vector<store::Session> held = HeldPool(engine.storage.get());
  const auto t0 = std::chrono::steady_clock::now();
  batcher::Batcher batcher(engine.storage.get(), HeldPoolOptions(2500));
  batcher.Start();
  // Nobody reports: the four free containers die once silent...
  const auto status = [&](const std::string& id) {
    return engine->GetContainer(id).container.status;
  };
  REQUIRE(WaitFor([&] { return batcher.stats().dead_marked.load() == 4; }, milliseconds(10000)));
  // ...while the two held ones keep their sessions.
  CHECK(batcher.mass_silence().held_pools() == 1);
  CHECK(status(held[0].container_id) == "picked");
  CHECK(status(held[1].container_id) == "picked");
  CHECK(batcher.stats().sessions_ended.load() == 0);
  // Past the grace, they end.
  REQUIRE(WaitFor([&] { return batcher.stats().sessions_ended.load() == 2; }, milliseconds(10000)));
  CHECK(std::chrono::steady_clock::now() - t0 >= milliseconds(2400));  // heard just before t0
  CHECK(status(held[0].container_id) == "dead");
  REQUIRE(WaitFor([&] { return batcher.mass_silence().held_pools() == 0; }, milliseconds(5000)));
  batcher.Stop();
  engine->StopWriters();
}

// Deafness is not death, in a mass silence too: time this server could not
// hear during the grace does not count toward it.
TEST_CASE("mass silence: time the server could not hear does not count toward the grace") {
  testing::Engine engine(EDGEALLOC_ENGINES, store::ClaimPolicy{}, 1);
  HeldPool(engine.storage.get());
  const auto t0 = std::chrono::steady_clock::now();
  batcher::Batcher batcher(engine.storage.get(), HeldPoolOptions(2000));
  batcher.Start();
  REQUIRE(WaitFor([&] { return batcher.stats().dead_marked.load() == 4; }, milliseconds(10000)));
  std::this_thread::sleep_until(t0 + milliseconds(1000));
  // As a pause would: the server heard nothing in [now - 800 ms, now].
  batcher.hearing().NoteDeaf(batcher::Hearing::Cause::kPause, "test", 800);
  REQUIRE(WaitFor([&] { return batcher.stats().sessions_ended.load() == 2; }, milliseconds(10000)));
  // 2 s of silence heard: 2.8 s after the last report, just before t0.
  CHECK(std::chrono::steady_clock::now() - t0 >= milliseconds(2700));
  batcher.Stop();
  engine->StopWriters();
}

// A storage whose silent count fails (as a count refused for a database
// clock step does) until let go.
class FailingCount : public testing::ForwardingStorage {
 public:
  using ForwardingStorage::ForwardingStorage;
  std::atomic<bool> failing{true};
  std::atomic<int> refused{0};
  store::Status CountSilent(int64_t cutoff_ms, std::vector<store::PoolSilence>* silent) override {
    if (failing.load()) {
      ++refused;
      return store::Status::Busy("the test refuses the count");
    }
    return ForwardingStorage::CountSilent(cutoff_ms, silent);
  }
};

// Whether a pool is in a mass silence is not known while the count fails:
// the reaper then judges no silence, rather than end held sessions without
// their grace; a container that reports itself dead still dies.
TEST_CASE("mass silence: while the silent count fails no silence is judged, held sessions kept") {
  testing::Engine engine(EDGEALLOC_ENGINES, store::ClaimPolicy{}, 1);
  FailingCount storage(engine.storage.get());
  const std::vector<store::Session> held = HeldPool(engine.storage.get());
  batcher::Batcher batcher(&storage, HeldPoolOptions(2500));
  batcher.Start();
  // Past dead-after, with counts refused: nobody dies of silence...
  REQUIRE(WaitFor([&] { return storage.refused.load() >= 20; }, milliseconds(10000)));
  CHECK(batcher.stats().dead_marked.load() == 0);
  CHECK(batcher.stats().sessions_ended.load() == 0);
  // ...but a held one that says it is dead does, its session ended (a free
  // one's dead report kills it in the write itself).
  testing::ReportNow(engine.storage.get(), held[0].container_id, store::ReportedState::kDead);
  REQUIRE(WaitFor([&] { return batcher.stats().dead_marked.load() == 1; }, milliseconds(10000)));
  CHECK(batcher.stats().sessions_ended.load() == 1);
  // Counted: the free four die, the other held one keeps its session.
  storage.failing = false;
  REQUIRE(WaitFor([&] { return batcher.stats().dead_marked.load() == 5; }, milliseconds(10000)));
  CHECK(batcher.stats().sessions_ended.load() == 1);
  CHECK(batcher.mass_silence().held_pools() == 1);
  batcher.Stop();
  engine->StopWriters();
}

}  // namespace
