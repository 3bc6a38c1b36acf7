#ifndef EDGEALLOC_ALLOCATOR_REGISTRY_H_
#define EDGEALLOC_ALLOCATOR_REGISTRY_H_

#include <mutex>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "allocator/types.h"
#include "store/shard.h"
#include "store/shard_map.h"

namespace allocator {

// The Registry is the admin side of the pool: register or update containers,
// read one, drain one, remove one. Writes go through the writer of the shard
// that owns the container's region, like claims, and are durable before the
// callback runs. Safe from any thread; the shards must outlive it.
class Registry {
 public:
  Registry(std::vector<store::Shard*> shards, store::ShardMap map);

  // Registers new containers as `available` and updates known ones (data and
  // latency always; region and pool only when not picked; never the holder).
  // Registration counts as a heartbeat, and revives a `dead` container that is
  // not picked. All of one shard's containers are written in one transaction.
  // kOk with count = containers written; kConflict if an id is registered in,
  // or being registered to, a region of another shard (also twice in one
  // call); kOverloaded; kError. `done` may run on the calling thread (a
  // refusal) or on a writer thread.
  // REQUIRES: every spec validated (ids, region, pool non-empty, data an object).
  void Register(std::vector<ContainerSpec> specs, ContainerCallback done);

  // Reads a container (exact, from SQLite). kOk, kNotFound or kError.
  ContainerResult Get(std::string_view id);

  // An available container becomes draining; a picked one becomes draining
  // when its session ends. kOk, kNotFound, kOverloaded or kError.
  void Drain(std::string id, ContainerCallback done);

  // Removes a container that is not picked. kOk, kConflict (picked),
  // kNotFound, kOverloaded or kError.
  void Remove(std::string id, ContainerCallback done);

 private:
  // The shard holding `id`, looked up in every shard; -1 if none.
  int FindShard(std::string_view id);
  // The shard holding `id`; if none, answers *done with kNotFound and
  // returns null.
  store::Shard* ShardOrAnswer(const std::string& id, ContainerCallback* done);

  std::vector<store::Shard*> shards_;
  store::ShardMap map_;
  // Ids between their shard check and their commit, with their shard, so two
  // concurrent registrations cannot put one id into two shards. Only used
  // with more than one shard. (Another process registering the same new id
  // at the same moment is not covered: README says so.)
  std::mutex pending_mu_;
  std::unordered_map<std::string, int> pending_;  // GUARDED_BY(pending_mu_)
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_REGISTRY_H_
