#ifndef EDGEALLOC_BASE_HISTOGRAM_H_
#define EDGEALLOC_BASE_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace base {

// A Histogram counts observations into fixed buckets, for /metrics. It lives in base/, which
// every part may use, so the batcher and the server count with one class. Observe
// and every reader are safe from any thread at once (relaxed atomics: a
// reader may see a count and a sum that are one observation apart).
class Histogram {
 public:
  // Upper bounds, inclusive and ascending; at most kMaxBounds of them. A
  // bucket +Inf follows the last one.
  static constexpr size_t kMaxBounds = 15;

  explicit Histogram(std::initializer_list<int64_t> upper_bounds)
      : Histogram(std::span<const int64_t>(upper_bounds.begin(), upper_bounds.size())) {}
  explicit Histogram(std::span<const int64_t> upper_bounds);
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

// A LatencyHistogram counts durations for /metrics (e.g.
// edgealloc_claim_duration_seconds): a Histogram of nanoseconds, so Observe
// compares integers exactly, with its bounds and sum read out in seconds, as
// Prometheus wants them. Thread rules as Histogram's.
class LatencyHistogram {
 public:
  // Upper bounds, inclusive and ascending; a bucket +Inf follows.
  static constexpr std::array<int64_t, 12> kBoundsNanos = {
      500'000,     1'000'000,   2'500'000,   5'000'000,     10'000'000,    25'000'000,
      50'000'000,  100'000'000, 250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000};
  static constexpr size_t kBounds = kBoundsNanos.size();
  // REQUIRES: i < kBounds.
  static double BoundSeconds(size_t i) { return static_cast<double>(kBoundsNanos[i]) / 1e9; }

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Counts one duration; a negative one counts as zero.
  void Observe(std::chrono::nanoseconds d) { nanos_.Observe(std::max<int64_t>(0, d.count())); }

  // Observations <= BoundSeconds(i) (Prometheus' cumulative `le` buckets);
  // CumulativeCount(kBounds) is every observation (+Inf). REQUIRES: i <= kBounds.
  uint64_t CumulativeCount(size_t i) const { return nanos_.CumulativeCount(i); }
  uint64_t count() const { return nanos_.count(); }
  double SumSeconds() const { return static_cast<double>(nanos_.sum()) / 1e9; }

 private:
  Histogram nanos_{std::span<const int64_t>(kBoundsNanos)};
};

}  // namespace base

#endif  // EDGEALLOC_BASE_HISTOGRAM_H_
