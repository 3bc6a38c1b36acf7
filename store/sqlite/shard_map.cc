#include "store/sqlite/shard_map.h"

#include <cassert>

namespace store {

ShardMap::ShardMap(std::string base_path, int shards)
    : base_path_(std::move(base_path)), shards_(shards) {
  assert(shards >= 1);
}

uint64_t ShardMap::StableHash(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

int ShardMap::ShardOf(std::string_view region) const {
  if (shards_ == 1) return 0;
  return static_cast<int>(StableHash(region) % static_cast<uint64_t>(shards_));
}

std::string ShardMap::PathOf(int shard) const {
  if (shards_ == 1) return base_path_;
  return base_path_ + ".shard" + std::to_string(shard) + "-of-" + std::to_string(shards_);
}

std::string ShardMap::LayoutOf(int shard) const {
  return std::to_string(shard) + "/" + std::to_string(shards_);
}

}  // namespace store
