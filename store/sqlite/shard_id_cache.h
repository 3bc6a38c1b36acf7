#ifndef EDGEALLOC_STORE_SQLITE_SHARD_ID_CACHE_H_
#define EDGEALLOC_STORE_SQLITE_SHARD_ID_CACHE_H_

#include <cstddef>
#include <string>
#include <unordered_map>

#include "base/mutex.h"

namespace store {

// Which shard holds a container, as SqliteStorage last found it (several
// shards only): a heartbeat's PartitionOf reads it instead of every shard.
// Only ids found are remembered (one registered a moment later must be
// found by its next heartbeat); an id written as unknown is forgotten. When
// full it is cleared, which costs one lookup per id afterwards. Safe from
// any thread.
class ShardIdCache {
 public:
  static constexpr size_t kMaxIds = 1 << 20;
  explicit ShardIdCache(size_t max_ids = kMaxIds) : max_ids_(max_ids) {}
  ShardIdCache(const ShardIdCache&) = delete;
  ShardIdCache& operator=(const ShardIdCache&) = delete;

  // The shard `id` was remembered in, or -1.
  int Find(const std::string& id) const;
  void Remember(const std::string& id, int shard);
  void Forget(const std::string& id);
  size_t size() const;

 private:
  const size_t max_ids_;
  mutable base::SharedMutex mu_;
  std::unordered_map<std::string, int> shard_of_id_ GUARDED_BY(mu_);
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SHARD_ID_CACHE_H_
