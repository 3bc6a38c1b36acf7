#include "base/histogram.h"

#include <cassert>

namespace base {

Histogram::Histogram(std::span<const int64_t> upper_bounds) {
  assert(upper_bounds.size() <= kMaxBounds);
  for (int64_t b : upper_bounds) {
    assert(n_bounds_ == 0 || b > bounds_[n_bounds_ - 1]);
    bounds_[n_bounds_++] = b;
  }
}

void Histogram::Observe(int64_t value) {
  size_t i = 0;
  while (i < n_bounds_ && value > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Histogram::CumulativeCount(size_t i) const {
  uint64_t total = 0;
  for (size_t b = 0; b <= i && b <= n_bounds_; ++b) total += bucket_count(b);
  return total;
}

}  // namespace base
