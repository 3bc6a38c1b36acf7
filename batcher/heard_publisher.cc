#include "batcher/heard_publisher.h"

#include <chrono>
#include <utility>

namespace batcher {

HeardPublisher::HeardPublisher(store::Storage* storage, int64_t dead_after_ms, int interval_ms,
                               std::function<std::vector<int64_t>()> heard_until)
    : storage_(storage),
      dead_after_ms_(dead_after_ms),
      interval_ms_(interval_ms),
      heard_until_(std::move(heard_until)) {}

void HeardPublisher::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void HeardPublisher::Stop() {
  stop_.Stop();
  if (thread_.joinable()) thread_.join();
}

void HeardPublisher::Loop() {
  do {
    if (!storage_->PublishHeardUntil(heard_until_(), dead_after_ms_).ok()) {
      failures_.fetch_add(1, std::memory_order_relaxed);
    }
  } while (!stop_.WaitFor(std::chrono::milliseconds(interval_ms_)));
}

}  // namespace batcher
