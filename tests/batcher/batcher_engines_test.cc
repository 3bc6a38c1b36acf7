// The Batcher over each storage engine (tests/support/engines.h): accepted
// heartbeats are written, the dead reaper marks silent containers dead.
#include "batcher/batcher.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "tests/support/engines.h"

namespace {

void Register(store::Storage* s, const std::vector<std::string>& ids) {
  std::vector<store::ContainerSpec> specs;
  for (const auto& id : ids) specs.push_back({id, "weur", "p", 0, "{}"});
  std::promise<store::ContainerResult> p;
  auto f = p.get_future();
  s->Register(specs, [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
  REQUIRE(f.get().outcome == store::Outcome::kOk);
}

batcher::Heartbeat Beat(const std::string& id, batcher::Heartbeat::State state) {
  batcher::Heartbeat h;
  h.container_id = id;
  h.state = state;
  h.accepted_ms = base::NowMs();
  return h;
}

}  // namespace

TEST_CASE("batcher engines: accepted heartbeats are in the store once Stop returns") {
  testing::Engine e(GENERATE(as<std::string>{}, "sqlite", "postgres"));
  Register(e.storage.get(), {"a", "b"});
  batcher::BatcherOptions options;
  options.dead_after_ms = 3600 * 1000;
  batcher::Batcher b(e.storage.get(), options);
  b.Start();
  std::vector<batcher::Heartbeat> items = {Beat("a", batcher::Heartbeat::State::kDraining),
                                           Beat("b", batcher::Heartbeat::State::kNone),
                                           Beat("zz", batcher::Heartbeat::State::kNone)};
  CHECK(b.Submit(std::move(items)).accepted());
  b.Stop();
  CHECK(b.stats().written.load() == 2);
  CHECK(b.stats().unknown.load() == 1);
  CHECK(e->GetContainer("a").container.status == "draining");
}

TEST_CASE("batcher engines: the dead reaper marks a silent container dead") {
  testing::Engine e(GENERATE(as<std::string>{}, "sqlite", "postgres"));
  Register(e.storage.get(), {"quiet"});
  batcher::BatcherOptions options;
  options.dead_after_ms = 50;
  options.reaper_interval_ms = 10;
  batcher::Batcher b(e.storage.get(), options);
  b.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (b.stats().dead_marked.load() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  b.Stop();
  CHECK(b.stats().dead_marked.load() == 1);
  CHECK(e->GetContainer("quiet").container.status == "dead");
}
