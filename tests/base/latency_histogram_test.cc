#include "base/histogram.h"

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

namespace base {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST_CASE("histogram: observations fall into cumulative le buckets and +Inf holds them all") {
  LatencyHistogram h;
  h.Observe(microseconds(500));   // exactly 0.0005: the bound is inclusive
  h.Observe(microseconds(501));   // 0.001
  h.Observe(milliseconds(30));    // 0.05
  h.Observe(milliseconds(5000));  // beyond 2.5: +Inf only
  h.Observe(microseconds(-3));    // a negative duration counts as zero
  CHECK(h.CumulativeCount(0) == 2);
  CHECK(h.CumulativeCount(1) == 3);
  CHECK(h.CumulativeCount(5) == 3);   // le 0.025
  CHECK(h.CumulativeCount(6) == 4);   // le 0.05
  CHECK(h.CumulativeCount(LatencyHistogram::kBounds - 1) == 4);
  CHECK(h.CumulativeCount(LatencyHistogram::kBounds) == 5);
  CHECK(h.count() == 5);
  CHECK(h.SumSeconds() == Approx(5.031001));
}

TEST_CASE("histogram: observations from many threads are all counted") {
  LatencyHistogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (int i = 0; i < 10000; ++i) h.Observe(microseconds(i % 3000));
    });
  }
  for (auto& t : threads) t.join();
  CHECK(h.count() == 40000);
  CHECK(h.CumulativeCount(LatencyHistogram::kBounds) == 40000);
}

}  // namespace
}  // namespace base
