#include "batcher/stats.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

TEST_CASE("stats: a histogram counts each value in the first bucket whose bound holds it") {
  batcher::Histogram h{1, 2, 5};
  for (int64_t v : {0, 1, 2, 3, 5, 6, 100}) h.Observe(v);
  CHECK(h.bounds() == 3);
  CHECK(h.upper_bound(2) == 5);
  CHECK(h.bucket_count(0) == 2);  // 0, 1
  CHECK(h.bucket_count(1) == 1);  // 2
  CHECK(h.bucket_count(2) == 2);  // 3, 5
  CHECK(h.bucket_count(3) == 2);  // +Inf: 6, 100
  CHECK(h.CumulativeCount(1) == 3);
  CHECK(h.CumulativeCount(3) == h.count());
  CHECK(h.count() == 7);
  CHECK(h.sum() == 117);
}

TEST_CASE("stats: a histogram observed from several threads loses no count") {
  batcher::Histogram h{batcher::kBatchSizeBuckets};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.Observe(i % 120);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(h.count() == 40000);
  CHECK(h.CumulativeCount(h.bounds()) == 40000);
}
