#include "base/stop_signal.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "base/clock.h"

namespace {

using std::chrono::milliseconds;

TEST_CASE("stop signal: a wait lasts its period unless stopped") {
  base::StopSignal stop;
  const int64_t t0 = base::SteadyNowMs();
  CHECK_FALSE(stop.WaitFor(milliseconds(50)));
  CHECK(base::SteadyNowMs() - t0 >= 50);
  CHECK_FALSE(stop.stopped());
}

TEST_CASE("stop signal: a stop ends a long wait at once, and stays") {
  base::StopSignal stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stop.Stop();
  });
  const int64_t t0 = base::SteadyNowMs();
  CHECK(stop.WaitFor(milliseconds(60000)));
  // Bounded far below the period: a loaded machine may be slow to wake.
  CHECK(base::SteadyNowMs() - t0 < 30000);
  stopper.join();
  CHECK(stop.stopped());
  CHECK(stop.WaitFor(milliseconds(60000)));  // at once: stopped for good
}

}  // namespace
