#ifndef EDGEALLOC_SERVER_HISTOGRAM_H_
#define EDGEALLOC_SERVER_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace server {

// A LatencyHistogram counts durations into fixed buckets, in seconds as
// Prometheus wants them, for /metrics (edgealloc_claim_duration_seconds).
// Observe and every reader are safe from any thread at once and never lock:
// each bucket, the count and the sum are relaxed atomics, so a reader may see
// a count and a sum one observation apart (which Prometheus tolerates).
class LatencyHistogram {
 public:
  // Upper bounds in seconds, inclusive and ascending; a bucket +Inf follows.
  static constexpr std::array<double, 12> kBoundsSeconds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};
  static constexpr size_t kBounds = kBoundsSeconds.size();

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Counts one duration; a negative one counts as zero.
  void Observe(std::chrono::nanoseconds d);

  // Observations <= kBoundsSeconds[i] (Prometheus' cumulative `le` buckets);
  // CumulativeCount(kBounds) is every observation (+Inf).
  // REQUIRES: i <= kBounds.
  uint64_t CumulativeCount(size_t i) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // The sum of all observations, in seconds.
  double SumSeconds() const;

 private:
  std::array<std::atomic<uint64_t>, kBounds + 1> buckets_{};  // non-cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_nanos_{0};
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HISTOGRAM_H_
