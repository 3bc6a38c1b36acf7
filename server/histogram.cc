#include "server/histogram.h"

#include <algorithm>

namespace server {
namespace {

// The bounds in nanoseconds, so Observe compares integers.
constexpr std::array<int64_t, LatencyHistogram::kBounds> BoundsNanos() {
  std::array<int64_t, LatencyHistogram::kBounds> out{};
  for (size_t i = 0; i < LatencyHistogram::kBounds; ++i) {
    out[i] = static_cast<int64_t>(LatencyHistogram::kBoundsSeconds[i] * 1e9 + 0.5);
  }
  return out;
}
constexpr std::array<int64_t, LatencyHistogram::kBounds> kBoundsNanos = BoundsNanos();

}  // namespace

void LatencyHistogram::Observe(std::chrono::nanoseconds d) {
  const int64_t nanos = std::max<int64_t>(0, d.count());
  // Few buckets: a linear scan beats a binary search and needs no branch tricks.
  size_t i = 0;
  while (i < kBounds && nanos > kBoundsNanos[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(static_cast<uint64_t>(nanos), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t LatencyHistogram::CumulativeCount(size_t i) const {
  uint64_t total = 0;
  for (size_t b = 0; b <= i && b <= kBounds; ++b) {
    total += buckets_[b].load(std::memory_order_relaxed);
  }
  return total;
}

double LatencyHistogram::SumSeconds() const {
  return static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9;
}

}  // namespace server
