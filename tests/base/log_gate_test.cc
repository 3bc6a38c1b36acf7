#include "base/log_gate.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace base {
namespace {

TEST_CASE("log_gate: one line a period, and the next says how many were held back") {
  LogGate gate(std::chrono::milliseconds(10000));
  uint64_t held = 99;
  REQUIRE(gate.Due(5000, &held));
  CHECK(held == 0);
  for (int64_t t = 5000; t < 15000; t += 10) CHECK_FALSE(gate.Due(t, &held));
  REQUIRE(gate.Due(15000, &held));
  CHECK(held == 1000);
  CHECK_FALSE(gate.Due(15001, &held));
  REQUIRE(gate.Due(40000, &held));
  CHECK(held == 1);
}

TEST_CASE("log_gate: from many threads at once, one line a period, none lost from the count") {
  LogGate gate(std::chrono::milliseconds(1000000));
  std::atomic<int> lines{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      uint64_t held = 0;
      for (int n = 0; n < 1000; ++n) lines += gate.Due(7, &held) ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(lines.load() == 1);
  uint64_t held = 0;
  REQUIRE(gate.Due(7 + 1000000, &held));
  CHECK(held == 3999);
}

}  // namespace
}  // namespace base
