#ifndef EDGEALLOC_SERVER_HISTOGRAM_H_
#define EDGEALLOC_SERVER_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "store/histogram.h"

namespace server {

// A LatencyHistogram counts durations for /metrics
// (edgealloc_claim_duration_seconds): store::Histogram counting nanoseconds,
// with its bounds and sum read out in seconds, as Prometheus wants them.
// Safe from any thread at once and never locks (store::Histogram's relaxed
// atomics: a reader may see a count and a sum one observation apart).
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
  void Observe(std::chrono::nanoseconds d) { nanos_.Observe(std::max<int64_t>(0, d.count())); }

  // Observations <= kBoundsSeconds[i] (Prometheus' cumulative `le` buckets);
  // CumulativeCount(kBounds) is every observation (+Inf).
  // REQUIRES: i <= kBounds.
  uint64_t CumulativeCount(size_t i) const { return nanos_.CumulativeCount(i); }
  uint64_t count() const { return nanos_.count(); }
  // The sum of all observations, in seconds.
  double SumSeconds() const { return static_cast<double>(nanos_.sum()) / 1e9; }

 private:
  // kBoundsSeconds in nanoseconds, so Observe compares integers exactly.
  store::Histogram nanos_{500'000,     1'000'000,   2'500'000,   5'000'000,
                          10'000'000,  25'000'000,  50'000'000,  100'000'000,
                          250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000};
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HISTOGRAM_H_
