#ifndef EDGEALLOC_ALLOCATOR_REGISTRY_H_
#define EDGEALLOC_ALLOCATOR_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/types.h"
#include "base/mutex.h"
#include "store/shard.h"
#include "store/shard_map.h"
#include "store/write_lock.h"

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
  // A new id's tokens start above every token any deleted container had
  // (in any shard), so a fencing token never repeats for an id.
  // kOk with count = containers written; kConflict if an id is registered in
  // a region of another shard (also twice in one call); kOverloaded; kError.
  // With several shards, registrations run one at a time across processes
  // (the caller may wait for the one before). `done` may run on the calling
  // thread (a refusal) or on a writer thread.
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
  // Finds the shard holding `id`: *found is its index, or -1 if no shard
  // has it. A failed read is returned as it is, never taken for "unknown".
  store::Status FindShard(std::string_view id, int* found);
  // The highest token floor of all shards (store/schema.cc, version 4).
  store::Status HighestTokenFloor(int64_t* floor);
  // The shard holding `id`; if none, or if looking failed, answers *done
  // and returns null.
  store::Shard* ShardOrAnswer(const std::string& id, ContainerCallback* done);
  // Several shards only: makes this registration the only one running, in
  // this process (registering_) and across processes (an exclusive flock on
  // `<db>.register.lock`, which every program that registers takes), from
  // its checks until its last shard's commit. Busy after
  // kRegistrationLockTimeoutMs. LeaveRegistration ends it; it may run on
  // another thread than Enter (a writer's, after the commit).
  store::Status EnterRegistration();
  void LeaveRegistration();

  static constexpr int kRegistrationLockTimeoutMs = 10000;

  std::vector<store::Shard*> shards_;
  store::ShardMap map_;
  std::string program_ = "edgealloc registry";
  base::Mutex registration_mu_;
  base::CondVar registration_cv_;
  bool registering_ GUARDED_BY(registration_mu_) = false;
  // Opened on first use; touched only by the registration that is running.
  std::unique_ptr<store::WriteLock> register_lock_;
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_REGISTRY_H_
