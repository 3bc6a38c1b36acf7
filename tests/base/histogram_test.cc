#include "base/histogram.h"

#include <catch2/catch.hpp>

namespace {

TEST_CASE("histogram: a bound is inclusive and what lies past the last one goes to +Inf") {
  base::Histogram h{10, 20};
  for (int64_t v : {10, 11, 20, 21}) h.Observe(v);
  CHECK(h.bucket_count(0) == 1);
  CHECK(h.bucket_count(1) == 2);
  CHECK(h.bucket_count(2) == 1);
  CHECK(h.CumulativeCount(h.bounds()) == 4);
  CHECK(h.sum() == 62);
}

}  // namespace
