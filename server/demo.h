#ifndef EDGEALLOC_SERVER_DEMO_H_
#define EDGEALLOC_SERVER_DEMO_H_

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/stop_signal.h"
#include "store/storage.h"
#include "batcher/batcher.h"

namespace server {

// A Demo is the `--demo` fleet: 60 containers (regions weur, eeur, wnam;
// pools chrome and firefox, 8 each of one slot; pool workers, 4 each of 4
// slots, attribute arch x86 or arm) registered once at start through the
// storage, then kept alive the way real containers are: a heartbeat with
// state "ready" for each through the Batcher every kMaxPeriodMs or a third of
// --dead-after-ms, whichever is smaller, so the demo exercises the real
// heartbeat path. Its own thread sends them; Start and Stop are for the
// owning thread. The storage and batcher must outlive it; stop the Demo
// before Batcher::Stop().
class Demo {
 public:
  // The longest pause between two rounds of heartbeats.
  static constexpr int64_t kMaxPeriodMs = 1000;
  // The shortest, whatever --dead-after-ms says.
  static constexpr int64_t kMinPeriodMs = 10;

  Demo(store::Storage* storage, batcher::Batcher* batcher, int64_t dead_after_ms);
  Demo(const Demo&) = delete;
  Demo& operator=(const Demo&) = delete;
  ~Demo();

  // Registers the fleet once (waiting for it) and starts the heartbeat
  // thread. Returns false with *error if the registration failed.
  bool Start(std::string* error);
  // Stops and joins the thread. Idempotent.
  void Stop();

  // The demo containers: ids "demo-<region>-<pool>-<i>", data
  // {"endpoint":"ws://demo-<id>:9222"}; a workers container's attributes
  // {"arch":"x86"} for an even i, {"arch":"arm"} for an odd one.
  static std::vector<store::ContainerSpec> Fleet();

 private:
  // Registers the fleet and waits. kOk on success.
  store::ContainerResult RegisterOnce();
  // Submits one "ready" heartbeat for each container of the fleet.
  batcher::SubmitResult HeartbeatOnce();
  void Loop();

  store::Storage* storage_;
  batcher::Batcher* batcher_;
  int64_t period_ms_;
  base::StopSignal stop_;
  std::thread thread_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_DEMO_H_
