// PoolTurns: whose turn it is in a waiting pool, a pool's pace, and the
// Retry-After told a waiter that gives up.

#include "allocator/pool_turns.h"

#include <catch2/catch.hpp>

namespace {

using allocator::PoolKey;
using allocator::PoolTurns;

const PoolKey kPool{"weur", "chrome"};
const PoolKey kOther{"eeur", "chrome"};

}  // namespace

TEST_CASE("pool turns: the tenant served longest ago goes next, and a pool forgets when it empties") {
  PoolTurns turns;
  CHECK(turns.LastTurn(kPool, "a") == 0);
  turns.Take(kPool, "a");
  turns.Take(kPool, "b");
  CHECK(turns.LastTurn(kPool, "a") < turns.LastTurn(kPool, "b"));
  turns.Take(kPool, "a");
  CHECK(turns.LastTurn(kPool, "a") > turns.LastTurn(kPool, "b"));
  // Turns are the pool's own.
  CHECK(turns.LastTurn(kOther, "a") == 0);
  turns.Forget(kPool);
  CHECK(turns.LastTurn(kPool, "a") == 0);
  CHECK(turns.LastTurn(kPool, "b") == 0);
}

TEST_CASE("pool turns: a pool's pace is its recent serves a second, counted to now") {
  PoolTurns turns;
  CHECK(turns.ServesPerSecond(kPool, 1'000) == 0);
  turns.Served(kPool, 1'000);
  CHECK(turns.ServesPerSecond(kPool, 1'000) == 0);  // one sample: no pace yet
  for (int i = 1; i <= 4; ++i) turns.Served(kPool, 1'000 + i * 500);
  // Five serves half a second apart: four intervals in 2 s.
  CHECK(turns.ServesPerSecond(kPool, 3'000) == Approx(2.0));
  // Nothing since: the pace falls as time passes.
  CHECK(turns.ServesPerSecond(kPool, 5'000) == Approx(1.0));
  // Past the window, the old samples no longer count, and pruning drops them.
  CHECK(turns.ServesPerSecond(kPool, 3'000 + PoolTurns::kPaceWindowMs + 1) == 0);
  turns.PruneBefore(3'000 + PoolTurns::kPaceWindowMs + 1);
  CHECK(turns.ServesPerSecond(kPool, 3'000) == 0);
  // At most kPaceSamples are kept.
  for (int i = 0; i < 3 * PoolTurns::kPaceSamples; ++i) turns.Served(kOther, i * 100);
  const int64_t last = (3 * PoolTurns::kPaceSamples - 1) * 100;
  CHECK(turns.ServesPerSecond(kOther, last) == Approx(10.0));
}

TEST_CASE("pool turns: Retry-After is the place over the pace, else the wait, 1 to 60 s") {
  // 9 ahead at 2 a second: the tenth is served in 5 s.
  CHECK(PoolTurns::RetryAfterS(9, 2.0, 30'000) == 5);
  CHECK(PoolTurns::RetryAfterS(0, 4.0, 30'000) == 1);   // never below 1
  CHECK(PoolTurns::RetryAfterS(2, 0.5, 30'000) == 6);
  CHECK(PoolTurns::RetryAfterS(1000, 1.0, 0) == PoolTurns::kMaxRetryAfterS);
  // No pace known: nothing freed while it waited, so as long again.
  CHECK(PoolTurns::RetryAfterS(3, 0, 2'030) == 2);
  CHECK(PoolTurns::RetryAfterS(3, 0, 100) == 1);
  CHECK(PoolTurns::RetryAfterS(3, 0, 600'000) == PoolTurns::kMaxRetryAfterS);
}
