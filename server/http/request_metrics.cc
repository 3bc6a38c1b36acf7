#include "server/http/request_metrics.h"

namespace server {

RequestMetrics::RequestMetrics() {
  routes_.push_back(std::make_unique<Route>());
  routes_.back()->label = "unmatched";
}

int RequestMetrics::AddRoute(const std::string& pattern) {
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (i != kUnmatched && routes_[i]->label == pattern) return static_cast<int>(i);
  }
  routes_.push_back(std::make_unique<Route>());
  routes_.back()->label = pattern;
  return static_cast<int>(routes_.size() - 1);
}

void RequestMetrics::Count(int route, int status) {
  if (status < kMinStatus || status > kMaxStatus) status = kMaxStatus;
  routes_[static_cast<size_t>(route)]->counts[static_cast<size_t>(status - kMinStatus)].fetch_add(
      1, std::memory_order_relaxed);
}

}  // namespace server
