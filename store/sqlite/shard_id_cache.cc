#include "store/sqlite/shard_id_cache.h"

namespace store {

int ShardIdCache::Find(const std::string& id) const {
  base::ReaderLock lock(&mu_);
  auto it = shard_of_id_.find(id);
  return it == shard_of_id_.end() ? -1 : it->second;
}

void ShardIdCache::Remember(const std::string& id, int shard) {
  base::WriterLock lock(&mu_);
  if (shard_of_id_.size() >= max_ids_) shard_of_id_.clear();
  shard_of_id_.insert_or_assign(id, shard);
}

void ShardIdCache::Forget(const std::string& id) {
  base::WriterLock lock(&mu_);
  shard_of_id_.erase(id);
}

size_t ShardIdCache::size() const {
  base::ReaderLock lock(&mu_);
  return shard_of_id_.size();
}

}  // namespace store
