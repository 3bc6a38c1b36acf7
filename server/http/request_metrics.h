#ifndef EDGEALLOC_SERVER_HTTP_REQUEST_METRICS_H_
#define EDGEALLOC_SERVER_HTTP_REQUEST_METRICS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace server {

// RequestMetrics counts HTTP requests by route pattern and status code for
// edgealloc_http_requests_total{route,status}. The label is the route's
// PATTERN ("/v1/sessions/{id}"), never the raw path, so the series stay as
// few as the routes times the status codes. Routes are added before serving,
// from the owning thread; Count and ForEach are then safe from any thread at
// once and never lock (one relaxed atomic a route and status).
class RequestMetrics {
 public:
  // Route index 0: requests that matched no route (404 unknown path).
  static constexpr int kUnmatched = 0;
  static constexpr int kMinStatus = 100;
  static constexpr int kMaxStatus = 599;

  RequestMetrics();
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;

  // The index of `pattern`, adding it if new (one index for every method of
  // a pattern). REQUIRES: no Count or ForEach runs at the same time.
  int AddRoute(const std::string& pattern);

  // Counts one answered request. A status outside [kMinStatus, kMaxStatus]
  // is counted as kMaxStatus. REQUIRES: 0 <= route < routes().
  void Count(int route, int status);

  // Calls fn(route label, status, count) for every pair counted at least
  // once, routes in the order added, statuses ascending.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (size_t r = 0; r < routes_.size(); ++r) {
      for (size_t s = 0; s < kSlots; ++s) {
        uint64_t n = routes_[r]->counts[s].load(std::memory_order_relaxed);
        if (n != 0) fn(routes_[r]->label, static_cast<int>(s) + kMinStatus, n);
      }
    }
  }

  int routes() const { return static_cast<int>(routes_.size()); }

 private:
  static constexpr size_t kSlots = kMaxStatus - kMinStatus + 1;
  struct Route {
    std::string label;
    std::array<std::atomic<uint64_t>, kSlots> counts{};
  };
  std::vector<std::unique_ptr<Route>> routes_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_REQUEST_METRICS_H_
