#include "store/sqlite/shard_map.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

TEST_CASE("shard_map: the region hash is FNV-1a 64 and pinned, so files stay put across builds") {
  using store::ShardMap;
  // Known FNV-1a 64 vectors, then the values of real region names: a change
  // of the hash would move regions to other files and lose their containers.
  CHECK(ShardMap::StableHash("") == 14695981039346656037ull);
  CHECK(ShardMap::StableHash("a") == 0xaf63dc4c8601ec8cull);
  CHECK(ShardMap::StableHash("weur") == 4447030811121376018ull);
  CHECK(ShardMap::StableHash("eeur") == 4756173254562397892ull);
  CHECK(ShardMap::StableHash("wnam") == 7550789409020331090ull);

  ShardMap four("/x/pool.db", 4);
  CHECK(four.ShardOf("weur") == 2);
  CHECK(four.ShardOf("eeur") == 0);
  CHECK(four.ShardOf("wnam") == 2);
  ShardMap three("/x/pool.db", 3);
  CHECK(three.ShardOf("weur") == 1);
  CHECK(three.ShardOf("eeur") == 2);
  CHECK(three.ShardOf("wnam") == 0);
}

TEST_CASE("shard_map: every region maps to a shard from 0 to N-1, and with N > 1 every shard gets some") {
  for (int n = 1; n <= 8; ++n) {
    store::ShardMap map("/x/pool.db", n);
    std::set<int> seen;
    for (int i = 0; i < 500; ++i) {
      const std::string region = "region-" + std::to_string(i);
      const int s = map.ShardOf(region);
      REQUIRE(s >= 0);
      REQUIRE(s < n);
      CHECK(map.ShardOf(region) == s);  // deterministic
      seen.insert(s);
    }
    CHECK(static_cast<int>(seen.size()) == n);
  }
  // Bytes above 0x7f are hashed as unsigned, and long names are fine.
  store::ShardMap map("/x/pool.db", 5);
  const int s = map.ShardOf("r\xc3\xa9gion-" + std::string(300, 'z'));
  CHECK(s >= 0);
  CHECK(s < 5);
}

TEST_CASE("shard_map: one shard is the base file itself, more are named i-of-N beside it") {
  store::ShardMap one("/data/pool.db", 1);
  CHECK(one.shards() == 1);
  CHECK(one.ShardOf("anything") == 0);
  CHECK(one.PathOf(0) == "/data/pool.db");
  CHECK(one.LayoutOf(0) == "0/1");

  store::ShardMap three("/data/pool.db", 3);
  CHECK(three.shards() == 3);
  CHECK(three.PathOf(0) == "/data/pool.db.shard0-of-3");
  CHECK(three.PathOf(2) == "/data/pool.db.shard2-of-3");
  CHECK(three.LayoutOf(1) == "1/3");
}
