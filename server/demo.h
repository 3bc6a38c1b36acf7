#ifndef EDGEALLOC_SERVER_DEMO_H_
#define EDGEALLOC_SERVER_DEMO_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "allocator/registry.h"

namespace server {

// A Demo is the `--demo` fleet: 48 containers (regions weur, eeur, wnam;
// pools chrome and firefox; 8 each) registered at start and re-registered at
// a third of --dead-after-ms, since registration counts as a heartbeat, so
// they stay alive without real containers. Its own thread does the
// re-registering; Start and Stop are for the owning thread. The registry must
// outlive it.
class Demo {
 public:
  Demo(allocator::Registry* registry, int64_t dead_after_ms);
  Demo(const Demo&) = delete;
  Demo& operator=(const Demo&) = delete;
  ~Demo();

  // Registers the fleet once (waiting for it) and starts the keep-alive
  // thread. Returns false with *error if the first registration failed.
  bool Start(std::string* error);
  // Stops and joins the thread. Idempotent.
  void Stop();

  // The demo containers: ids "demo-<region>-<pool>-<i>", data
  // {"endpoint":"ws://demo-<id>:9222"}.
  static std::vector<allocator::ContainerSpec> Fleet();

 private:
  // Registers the fleet and waits. kOk on success.
  allocator::ContainerResult RegisterOnce();
  void Loop();

  allocator::Registry* registry_;
  int64_t period_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_DEMO_H_
