#include "store/sqlite/shard_id_cache.h"

#include <catch2/catch.hpp>
#include <string>

using store::ShardIdCache;

TEST_CASE("shard_id_cache: an id is found in the shard it was remembered in, until forgotten") {
  ShardIdCache cache;
  CHECK(cache.Find("c-1") == -1);
  cache.Remember("c-1", 2);
  cache.Remember("c-2", 0);
  CHECK(cache.Find("c-1") == 2);
  CHECK(cache.Find("c-2") == 0);
  cache.Remember("c-1", 1);  // moved: the newest shard wins
  CHECK(cache.Find("c-1") == 1);
  cache.Forget("c-1");
  CHECK(cache.Find("c-1") == -1);
  CHECK(cache.Find("c-2") == 0);
  cache.Forget("never-seen");  // nothing to forget: no harm
  CHECK(cache.size() == 1);
}

TEST_CASE("shard_id_cache: when full it is cleared, and fills again") {
  ShardIdCache cache(3);
  for (int i = 0; i < 3; ++i) cache.Remember("c-" + std::to_string(i), i);
  CHECK(cache.size() == 3);
  cache.Remember("c-3", 1);  // the fourth: everything else is dropped
  CHECK(cache.size() == 1);
  CHECK(cache.Find("c-0") == -1);
  CHECK(cache.Find("c-3") == 1);
}
