#include "server/agent/retry_delay.h"

#include <catch2/catch.hpp>

namespace server {
namespace {

TEST_CASE("agent retry: Retry-After is honoured, with up to a quarter more, never less") {
  CHECK(RetryDelayMs(1, 2, 5000, 0.0) == 2000);
  CHECK(RetryDelayMs(1, 2, 5000, 0.999) < 2500);
  CHECK(RetryDelayMs(1, 2, 5000, 0.999) > 2400);
  // Longer than the interval too: the server asked for it.
  CHECK(RetryDelayMs(3, 60, 5000, 0.0) == 60000);
  // Retry-After: 0 still spreads the agents over a quarter second.
  CHECK(RetryDelayMs(1, 0, 5000, 0.999) > 200);
}

TEST_CASE("agent retry: without Retry-After, 250 ms doubling, never past the interval") {
  CHECK(RetryDelayMs(1, std::nullopt, 5000, 0.0) == 250);
  CHECK(RetryDelayMs(2, std::nullopt, 5000, 0.0) == 500);
  CHECK(RetryDelayMs(3, std::nullopt, 5000, 0.0) == 1000);
  CHECK(RetryDelayMs(10, std::nullopt, 5000, 0.0) == 5000);
  CHECK(RetryDelayMs(1000, std::nullopt, 5000, 0.0) == 5000);
  // Jitter takes up to a fifth off.
  CHECK(RetryDelayMs(10, std::nullopt, 5000, 0.999) > 4000);
  CHECK(RetryDelayMs(10, std::nullopt, 5000, 0.999) < 5000);
}

TEST_CASE("agent retry: the jitter draw is at least 0 and below 1") {
  for (int i = 0; i < 1000; ++i) {
    const double u = JitterUnit();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
  }
}

}  // namespace
}  // namespace server
