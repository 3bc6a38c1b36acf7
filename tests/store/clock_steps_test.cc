#include "store/clock_steps.h"

#include <catch2/catch.hpp>

TEST_CASE("clock steps: time passing alike on both clocks is no step") {
  store::ClockStepTracker t(500);
  CHECK(t.Observe(1'000'000, 10) == 0);  // the first reading: nothing to compare with
  CHECK(t.Observe(1'001'000, 1'010) == 0);
  CHECK(t.Observe(1'061'000, 61'010) == 0);  // a minute between readings
}

TEST_CASE("clock steps: a jump of the wall clock beyond the tolerance is the step, either way") {
  store::ClockStepTracker t(500);
  t.Observe(1'000'000, 10);
  CHECK(t.Observe(1'060'100, 110) == 60'000);  // 100 ms passed, the wall clock moved 60.1 s
  CHECK(t.Observe(1'000'200, 210) == -60'000);
  CHECK(t.Observe(1'000'801, 310) == 501);
  CHECK(t.Observe(1'000'400, 410) == -501);
}

TEST_CASE("clock steps: drift within the tolerance is followed, never summed into a step") {
  store::ClockStepTracker t(500);
  t.Observe(0, 0);
  // 400 ms ahead each second, for a minute: 24 s in all, yet each reading
  // is within the tolerance of the one before (NTP slewing, or a scheduler's
  // delay between readings).
  for (int64_t i = 1; i <= 60; ++i) CHECK(t.Observe(i * 1'400, i * 1'000) == 0);
}

TEST_CASE("clock steps: the process's wall clock, read twice without a step, is not stepped") {
  store::WallClockSteps& clock = store::WallClockSteps::Process();
  const store::WallClockSteps::Reading a = clock.Read();
  const store::WallClockSteps::Reading b = clock.Read();
  CHECK(b.stepped_ms == a.stepped_ms);
}
