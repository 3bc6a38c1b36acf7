#include "server/agent/retry_delay.h"

#include <algorithm>
#include <random>

namespace server {

int64_t RetryDelayMs(int failures, std::optional<int64_t> retry_after_s, int64_t interval_ms,
                     double unit) {
  if (retry_after_s) {
    const int64_t ms = std::min<int64_t>(*retry_after_s, 3600) * 1000;
    return ms + static_cast<int64_t>(static_cast<double>(std::max<int64_t>(ms, 1000)) / 4 * unit);
  }
  const int shift = std::clamp(failures - 1, 0, 20);
  const int64_t base = std::min<int64_t>(int64_t{250} << shift, interval_ms);
  return base - static_cast<int64_t>(static_cast<double>(base) / 5 * unit);
}

double JitterUnit() {
  static std::mt19937_64 gen{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

}  // namespace server
