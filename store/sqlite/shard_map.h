#ifndef EDGEALLOC_STORE_SQLITE_SHARD_MAP_H_
#define EDGEALLOC_STORE_SQLITE_SHARD_MAP_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace store {

// A ShardMap says which database file owns a region: `--shards N` splits the
// pool by region over N files by a stable hash (FNV-1a 64 of the region name,
// modulo N), so the same region always lands in the same file, across
// restarts and builds. A container lives in exactly one shard: its region's.
// Immutable; safe to share between threads.
class ShardMap {
 public:
  // REQUIRES: shards >= 1.
  ShardMap(std::string base_path, int shards);

  int shards() const { return shards_; }
  // The --db path the shard files are named after.
  const std::string& base_path() const { return base_path_; }
  // The shard that owns `region`, in [0, shards()).
  int ShardOf(std::string_view region) const;
  // The file of shard i: the base path itself with one shard, else
  // "<base>.shard<i>-of-<N>" beside it.
  std::string PathOf(int shard) const;
  // "i/N": written into each file so that a restart with another N is refused.
  std::string LayoutOf(int shard) const;

  static uint64_t StableHash(std::string_view s);

 private:
  std::string base_path_;
  int shards_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SHARD_MAP_H_
