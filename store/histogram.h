#ifndef EDGEALLOC_STORE_HISTOGRAM_H_
#define EDGEALLOC_STORE_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace store {

// A Histogram counts observations into fixed buckets, for /metrics. It lives in store/, the layer
// every part shares, so the batcher and the server count with one class. Observe
// and every reader are safe from any thread at once (relaxed atomics: a
// reader may see a count and a sum that are one observation apart).
class Histogram {
 public:
  // Upper bounds, inclusive and ascending; at most kMaxBounds of them. A
  // bucket +Inf follows the last one.
  static constexpr size_t kMaxBounds = 15;

  explicit Histogram(std::initializer_list<int64_t> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(int64_t value);

  // Finite buckets; bucket index bounds() is +Inf.
  size_t bounds() const { return n_bounds_; }
  // REQUIRES: i < bounds().
  int64_t upper_bound(size_t i) const { return bounds_[i]; }
  // Observations in bucket i alone (i <= bounds(); bounds() is +Inf).
  uint64_t bucket_count(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  // Observations <= upper_bound(i), as Prometheus' `le` buckets count them;
  // CumulativeCount(bounds()) is count().
  uint64_t CumulativeCount(size_t i) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  int64_t sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::array<int64_t, kMaxBounds> bounds_{};
  size_t n_bounds_ = 0;
  std::array<std::atomic<uint64_t>, kMaxBounds + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_{0};
};

}  // namespace store

#endif  // EDGEALLOC_STORE_HISTOGRAM_H_
