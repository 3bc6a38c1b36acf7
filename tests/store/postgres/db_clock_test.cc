#include "store/postgres/db_clock.h"

#include <catch2/catch.hpp>

namespace {

// A reading taken at monotonic `mono` (a 2 ms round trip) that found the
// database's clock at `db` and the fleet's record at (shifts, shifted).
store::DbClockReading At(int64_t db, int64_t mono, int64_t shifts = 0, int64_t shifted = 0) {
  store::DbClockReading r;
  r.db_ms = db;
  r.monotonic_before_ms = mono - 1;
  r.monotonic_after_ms = mono + 1;
  r.fleet_shifts = shifts;
  r.fleet_shifted_ms = shifted;
  return r;
}

// A node's steps after its first reading (the database at 1,000,000 ms, at
// monotonic 0); `expected` is the fleet's shift count it expects.
struct AfterFirstReading {
  AfterFirstReading() { node.Observe(At(1'000'000, 0), &expected); }
  store::DbClockSteps node;
  int64_t expected = -1;
};

}  // namespace

TEST_CASE("db clock: a step one node sees and shifts for is shifted once, and counted") {
  store::DbClockSteps node;
  int64_t expected = -1;
  CHECK(node.Observe(At(1'000'000, 0), &expected) == 0);
  CHECK(node.Observe(At(1'001'000, 1'000), &expected) == 0);
  CHECK(node.Observe(At(1'062'000, 2'000), &expected) == 60'000);
  CHECK(expected == 0);
  CHECK(node.pending());
  node.Applied(0, 60'000);
  CHECK_FALSE(node.pending());
  CHECK(node.applied() == 1);
  // Its own shift, read back, is no step and nothing more to shift.
  CHECK(node.Observe(At(1'063'000, 3'000, 1, 60'000), &expected) == 0);
  CHECK(expected == 1);
}

TEST_CASE("db clock: a node that sees a step another node already shifted for shifts nothing") {
  AfterFirstReading first;
  auto& [node, expected] = first;
  // Between its readings the clock stepped +60 s and another node shifted.
  CHECK(node.Observe(At(1'061'000, 1'000, 1, 60'010), &expected) == 0);
  CHECK_FALSE(node.pending());
  CHECK(node.applied() == 0);
}

TEST_CASE("db clock: a node paused across two steps shifts for the one no one shifted for") {
  AfterFirstReading first;
  auto& [node, expected] = first;
  // Paused 10 s; meanwhile +60 s (shifted by another node), then -20 s
  // (not yet shifted by anyone): it saw +40 s in all.
  CHECK(node.Observe(At(1'050'000, 10'000, 1, 60'000), &expected) == -20'000);
  CHECK(expected == 1);
}

TEST_CASE("db clock: a claim lost to another node is settled by the next reading") {
  AfterFirstReading first;
  auto& [node, expected] = first;
  CHECK(node.Observe(At(939'000, 1'000), &expected) == -62'000);  // a step back
  // Its compare-and-set lost: the other node's shift shows at the next
  // reading, and nothing is left to do.
  CHECK(node.Observe(At(939'500, 1'500, 1, -61'990), &expected) == 0);
  CHECK_FALSE(node.pending());
  CHECK(node.applied() == 0);
}

TEST_CASE("db clock: a read takes off a step its node has seen and no one has shifted for") {
  AfterFirstReading first;
  auto& [node, expected] = first;
  CHECK(node.Unshifted(At(1'000'500, 500)) == 0);
  // A read after a step no reading has taken in yet.
  CHECK(node.Unshifted(At(1'061'000, 1'000)) == 60'000);
  // The same, once another node shifted for it.
  CHECK(node.Unshifted(At(1'061'000, 1'000, 1, 60'000)) == 0);
  // Seen by a reading but not yet shifted: still taken off.
  CHECK(node.Observe(At(1'061'100, 1'100), &expected) == 60'000);
  CHECK(node.Unshifted(At(1'061'200, 1'200)) == 60'000);
  // A read over a slow round trip says nothing new of the clock.
  store::DbClockReading slow = At(1'061'200, 1'200);
  slow.monotonic_after_ms += 1'000;
  CHECK(node.Unshifted(slow) == 60'000);
}
