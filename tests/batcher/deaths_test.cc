#include "batcher/deaths.h"

#include <catch2/catch.hpp>

namespace batcher {
namespace {

store::DeadContainer Dead(const std::string& id, const std::string& region,
                          const std::string& pool, int64_t silent_ms, bool reported = false) {
  return {id, region, pool, silent_ms, reported};
}

TEST_CASE("deaths: one line says how many, by pool, how long silent, and the first ids") {
  CHECK(DescribeDeaths({}).empty());
  CHECK(DescribeDeaths({Dead("weur-1", "weur", "chrome", 31200), Dead("eeur-5", "eeur", "chrome", 30000),
                        Dead("weur-2", "weur", "chrome", 30400, true)}) ==
        "reaper: 3 containers dead (2 silent, 1 reported dead): weur/chrome 2, eeur/chrome 1; "
        "silent up to 31.2 s, median 30.4 s; weur-1, eeur-5, weur-2");
  CHECK(DescribeDeaths({Dead("a", "r", "p", 1500)}) ==
        "reaper: 1 container dead (1 silent, 0 reported dead): r/p 1; silent up to 1.5 s, median "
        "1.5 s; a");
}

TEST_CASE("deaths: a region dying at once is still one short line") {
  std::vector<store::DeadContainer> dead;
  for (int i = 0; i < 256; ++i) {
    dead.push_back(Dead("c-" + std::to_string(i), "weur", "pool" + std::to_string(i % 9), 30000));
  }
  const std::string line = DescribeDeaths(dead);
  CHECK_THAT(line, Catch::StartsWith("reaper: 256 containers dead (256 silent, 0 reported dead)"));
  CHECK_THAT(line, Catch::Contains(" and 4 more pools;"));
  CHECK_THAT(line, Catch::EndsWith("c-0, c-1, c-2, c-3, c-4 and 251 more"));
  CHECK(line.size() < 400);
}

TEST_CASE("deaths: the recent ones are kept by pool for ten minutes, the most first") {
  RecentDeaths recent;
  const int64_t t0 = 1790000000000;
  recent.Add(t0, {Dead("a", "weur", "chrome", 1), Dead("b", "weur", "chrome", 1, true),
                  Dead("c", "eeur", "chrome", 1)});
  recent.Add(t0 + 5 * 60000, {Dead("d", "eeur", "chrome", 1), Dead("e", "eeur", "chrome", 1)});
  auto now = recent.Snapshot(t0 + 5 * 60000);
  REQUIRE(now.size() == 2);
  CHECK(now[0].region == "eeur");
  CHECK(now[0].silent == 3);
  CHECK(now[0].last_ms == t0 + 5 * 60000);
  CHECK(now[1].region == "weur");
  CHECK(now[1].silent == 1);
  CHECK(now[1].reported == 1);
  // Eleven minutes on, only the later deaths are left; sixteen, none.
  auto later = recent.Snapshot(t0 + 11 * 60000);
  REQUIRE(later.size() == 1);
  CHECK(later[0].silent == 2);
  CHECK(recent.Snapshot(t0 + 16 * 60000).empty());
}

}  // namespace
}  // namespace batcher
