#ifndef EDGEALLOC_BATCHER_HEARD_PUBLISHER_H_
#define EDGEALLOC_BATCHER_HEARD_PUBLISHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "base/stop_signal.h"
#include "store/storage.h"

namespace batcher {

// Publishes, every interval_ms, each lane's "heard until" (the instant
// before which every heartbeat the node accepted for that lane is stored:
// Batcher's watermark) through Storage::PublishHeardUntil, so that the
// other nodes' sweeps, which judge the whole fleet, wait for the reports
// this node still writes. A thread of its own, not the reaper's: a reaper
// waiting behind a lane's slow write (the very case) must not stop the
// publishing, or the other nodes would take the node for gone (a node not
// heard from for their dead_after_ms is not waited for). The first publish
// is at Start, before the reaper's first sweep.
class HeardPublisher {
 public:
  HeardPublisher(store::Storage* storage, int64_t dead_after_ms, int interval_ms,
                 std::function<std::vector<int64_t>()> heard_until);
  HeardPublisher(const HeardPublisher&) = delete;
  HeardPublisher& operator=(const HeardPublisher&) = delete;
  ~HeardPublisher() { Stop(); }

  void Start();
  // Idempotent.
  void Stop();
  // Publishes that failed (the next one tries again).
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  void Loop();

  store::Storage* const storage_;
  const int64_t dead_after_ms_;
  const int interval_ms_;
  const std::function<std::vector<int64_t>()> heard_until_;
  std::atomic<uint64_t> failures_{0};
  base::StopSignal stop_;
  std::thread thread_;
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_HEARD_PUBLISHER_H_
