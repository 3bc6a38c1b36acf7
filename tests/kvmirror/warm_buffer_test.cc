#include "kvmirror/warm_buffer.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace kvmirror {
namespace {

// A pool of `containers` containers, `slots` slots in all, `used` of them
// in use and `free` free to claim.
StatusCounts Pool(int64_t containers, int64_t slots, int64_t used, int64_t free) {
  StatusCounts c;
  c.available = containers;
  c.slots = slots;
  c.slots_used = used;
  c.slots_free = free;
  return c;
}

WarmBuffers Parsed(const std::vector<std::string>& specs) {
  WarmBuffers out;
  std::string error;
  INFO(error);
  REQUIRE(WarmBuffers::Parse(specs, &out, &error));
  return out;
}

TEST_CASE("warm buffer: a count or a percentage, for every pool, a pool, or a region's pool") {
  const WarmBuffers b = Parsed({"2", "chrome=10%", "weur/chrome=5", "gpu=0"});
  CHECK(b.For("eeur", "firefox") == WarmBuffer{.slots = 2, .percent = 0});
  CHECK(b.For("eeur", "chrome") == WarmBuffer{.slots = 0, .percent = 10});
  CHECK(b.For("weur", "chrome") == WarmBuffer{.slots = 5, .percent = 0});
  CHECK(b.For("weur", "gpu").ToString() == "0");
  CHECK(b.For("eeur", "chrome").ToString() == "10%");
  // None given: no buffer.
  CHECK(WarmBuffers().For("weur", "chrome") == WarmBuffer{});
  // A later value for the same pool wins.
  CHECK(Parsed({"chrome=1", "chrome=3"}).For("x", "chrome").slots == 3);
}

TEST_CASE("warm buffer: what the flag refuses, in words") {
  for (const char* bad : {"", "-1", "x", "0%", "100%", "12.5%", "=3", "/chrome=3", "chrome=",
                          "weur/=3", "1,x"}) {
    INFO(bad);
    CHECK_FALSE(WarmBuffers::Check(bad).empty());
  }
  CHECK_THAT(WarmBuffers::Check("100%"), Catch::Contains("1% to 99%"));
  CHECK(WarmBuffers::Check("10%,weur/chrome=4").empty());  // a config file's list
  WarmBuffers out;
  std::string error;
  CHECK_FALSE(WarmBuffers::Parse({"chrome=abc"}, &out, &error));
  CHECK_THAT(error, Catch::Contains("a count of slots (4) or a percentage (10%)"));
}

TEST_CASE("warm buffer: a percentage keeps that share of used and free slots free") {
  const WarmBuffer ten{.slots = 0, .percent = 10};
  // 90 used: 10 free make 10% of 100.
  CHECK(WantedFreeSlots(ten, Pool(100, 100, 90, 0)) == 10);
  CHECK(WantedFreeSlots(ten, Pool(100, 100, 91, 0)) == 11);  // rounded up
  CHECK(WantedFreeSlots(WarmBuffer{.slots = 0, .percent = 50}, Pool(4, 16, 6, 10)) == 6);
  CHECK(WantedFreeSlots(ten, Pool(0, 0, 0, 0)) == 0);
  CHECK(WantedFreeSlots(WarmBuffer{.slots = 7, .percent = 0}, Pool(1, 1, 1, 0)) == 7);
}

TEST_CASE("warm buffer: recommended containers cover the missing slots and the waiting claims") {
  const WarmBuffer four{.slots = 4, .percent = 0};
  // Enough free: nothing to add.
  CHECK(RecommendedBuffer(four, Pool(10, 10, 6, 4), 0) == 0);
  CHECK(RecommendedBuffer(four, Pool(10, 10, 2, 8), 0) == 0);
  // 1 free of single-slot containers: 3 to add.
  CHECK(RecommendedBuffer(four, Pool(10, 10, 9, 1), 0) == 3);
  // Two waiting claims take two more.
  CHECK(RecommendedBuffer(four, Pool(10, 10, 9, 1), 2) == 5);
  // 8 slots a container: 3 missing slots are one container.
  CHECK(RecommendedBuffer(four, Pool(2, 16, 15, 1), 0) == 1);
  // A mean of 2.5 slots is counted as 2 (never too few): 9 missing, 5 to add.
  CHECK(RecommendedBuffer(WarmBuffer{.slots = 9, .percent = 0}, Pool(2, 5, 5, 0), 0) == 5);
  // A pool without containers: one slot a container.
  CHECK(RecommendedBuffer(four, Pool(0, 0, 0, 0), 1) == 5);
  // No buffer, nobody waiting: nothing, however full.
  CHECK(RecommendedBuffer(WarmBuffer{}, Pool(10, 10, 10, 0), 0) == 0);
}

}  // namespace
}  // namespace kvmirror
