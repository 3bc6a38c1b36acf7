#include "server/demo.h"

#include <algorithm>
#include <future>

#include "server/http_types.h"

namespace server {
namespace {

constexpr const char* kRegions[] = {"weur", "eeur", "wnam"};
constexpr const char* kPools[] = {"chrome", "firefox"};
constexpr int kPerPool = 8;
constexpr int64_t kMinPeriodMs = 10;

}  // namespace

Demo::Demo(allocator::Registry* registry, int64_t dead_after_ms)
    : registry_(registry), period_ms_(std::max(kMinPeriodMs, dead_after_ms / 3)) {}

Demo::~Demo() { Stop(); }

std::vector<allocator::ContainerSpec> Demo::Fleet() {
  std::vector<allocator::ContainerSpec> fleet;
  int region_index = 0;
  for (const char* region : kRegions) {
    for (const char* pool : kPools) {
      for (int i = 0; i < kPerPool; ++i) {
        allocator::ContainerSpec c;
        c.id = std::string("demo-") + region + "-" + pool + "-" + std::to_string(i);
        c.region = region;
        c.pool = pool;
        c.latency_ms = 5 + region_index * 20 + i * 3;
        c.data = "{\"endpoint\":\"ws://" + c.id + ":9222\"}";
        fleet.push_back(std::move(c));
      }
    }
    ++region_index;
  }
  return fleet;
}

allocator::ContainerResult Demo::RegisterOnce() {
  auto promise = std::make_shared<std::promise<allocator::ContainerResult>>();
  std::future<allocator::ContainerResult> result = promise->get_future();
  registry_->Register(Fleet(), [promise](allocator::ContainerResult r) {
    promise->set_value(std::move(r));
  });
  return result.get();
}

bool Demo::Start(std::string* error) {
  allocator::ContainerResult r = RegisterOnce();
  if (r.outcome != allocator::Outcome::kOk) {
    *error = "demo fleet registration failed: " + r.message;
    return false;
  }
  LogLine("edgealloc: demo fleet of " + std::to_string(r.count) +
          " containers registered (regions weur, eeur, wnam; pools chrome, firefox)");
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void Demo::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Demo::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(period_ms_), [this] { return stop_; })) {
    lock.unlock();
    allocator::ContainerResult r = RegisterOnce();
    if (r.outcome != allocator::Outcome::kOk) {
      LogLine("edgealloc: demo keep-alive registration failed: " + r.message);
    }
    lock.lock();
  }
}

}  // namespace server
