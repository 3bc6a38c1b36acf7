#include "server/demo.h"

#include <algorithm>
#include <future>

#include "base/clock.h"
#include "server/http/log.h"

namespace server {
namespace {

constexpr const char* kRegions[] = {"weur", "eeur", "wnam"};
constexpr const char* kPools[] = {"chrome", "firefox"};
constexpr int kPerPool = 8;
// The pool of containers holding several sessions each, with an attribute
// a selector can name: a packed claim and a selector have somewhere to go.
constexpr const char* kSlotsPool = "workers";
constexpr int kSlotsPerPool = 4;
constexpr int kSlotsEach = 4;

store::ContainerSpec DemoContainer(const char* region, const char* pool, int i, int64_t latency_ms) {
  store::ContainerSpec c;
  c.id = std::string("demo-") + region + "-" + pool + "-" + std::to_string(i);
  c.region = region;
  c.pool = pool;
  c.latency_ms = latency_ms;
  c.data = "{\"endpoint\":\"ws://" + c.id + ":9222\"}";
  return c;
}

}  // namespace

Demo::Demo(store::Storage* storage, batcher::Batcher* batcher, int64_t dead_after_ms)
    : storage_(storage),
      batcher_(batcher),
      period_ms_(std::clamp(dead_after_ms / 3, kMinPeriodMs, kMaxPeriodMs)) {}

Demo::~Demo() { Stop(); }

std::vector<store::ContainerSpec> Demo::Fleet() {
  std::vector<store::ContainerSpec> fleet;
  int region_index = 0;
  for (const char* region : kRegions) {
    for (const char* pool : kPools) {
      for (int i = 0; i < kPerPool; ++i) {
        fleet.push_back(DemoContainer(region, pool, i, 5 + region_index * 20 + i * 3));
      }
    }
    for (int i = 0; i < kSlotsPerPool; ++i) {
      store::ContainerSpec c = DemoContainer(region, kSlotsPool, i, 5 + region_index * 20 + i * 3);
      c.slots = kSlotsEach;
      c.attributes = std::string("{\"arch\":\"") + (i % 2 == 0 ? "x86" : "arm") + "\"}";
      fleet.push_back(std::move(c));
    }
    ++region_index;
  }
  return fleet;
}

store::ContainerResult Demo::RegisterOnce() {
  auto promise = std::make_shared<std::promise<store::ContainerResult>>();
  std::future<store::ContainerResult> result = promise->get_future();
  storage_->Register(Fleet(), [promise](store::ContainerResult r) {
    promise->set_value(std::move(r));
  });
  return result.get();
}

batcher::SubmitResult Demo::HeartbeatOnce() {
  const int64_t now = base::NowMs();
  std::vector<batcher::Heartbeat> beats;
  for (store::ContainerSpec& c : Fleet()) {
    batcher::Heartbeat h;
    h.container_id = std::move(c.id);
    h.ts_ms = now;
    h.state = batcher::Heartbeat::State::kReady;
    h.accepted_ms = now;
    beats.push_back(std::move(h));
  }
  return batcher_->Submit(std::move(beats));
}

bool Demo::Start(std::string* error) {
  store::ContainerResult r = RegisterOnce();
  if (r.outcome != store::Outcome::kOk) {
    *error = "demo fleet registration failed: " + r.message;
    return false;
  }
  LogLine("edgealloc: demo fleet of " + std::to_string(r.count) +
          " containers registered (regions weur, eeur, wnam; pools chrome, firefox, and workers "
          "of 4 slots each, attribute arch x86 or arm)");
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void Demo::Stop() {
  stop_.Stop();
  if (thread_.joinable()) thread_.join();
}

void Demo::Loop() {
  bool refused = false;  // log a refusal once, not once a round
  while (!stop_.WaitFor(std::chrono::milliseconds(period_ms_))) {
    batcher::SubmitResult r = HeartbeatOnce();
    if (!r.accepted() && !refused) {
      LogWarn(std::string("edgealloc: demo heartbeats refused (") +
              (r.code == batcher::SubmitResult::Code::kOverloaded ? "queue full" : "stopping") +
              "); will retry");
    }
    refused = !r.accepted();
  }
}

}  // namespace server
