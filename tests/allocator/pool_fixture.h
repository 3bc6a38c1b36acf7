#ifndef EDGEALLOC_TESTS_ALLOCATOR_POOL_FIXTURE_H_
#define EDGEALLOC_TESTS_ALLOCATOR_POOL_FIXTURE_H_

// A pool on real files for the allocator/ tests: shards opened with
// store::OpenShards in a TempDir, an Allocator and a Registry on them, and
// synchronous wrappers (a promise per call) around their callbacks.

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "allocator/allocator.h"
#include "allocator/registry.h"
#include "allocator/types.h"
#include "store/db.h"
#include "store/shard.h"
#include "store/shard_map.h"
#include "tests/support/temp_dir.h"

namespace testing {

inline allocator::ContainerSpec Spec(std::string id, std::string region,
                                     std::string pool = "default", int64_t latency_ms = 0,
                                     std::string data = "{}") {
  allocator::ContainerSpec s;
  s.id = std::move(id);
  s.region = std::move(region);
  s.pool = std::move(pool);
  s.latency_ms = latency_ms;
  s.data = std::move(data);
  return s;
}

inline allocator::ClaimRequest Req(std::string region, std::string tenant = "t1",
                                   std::string pool = "default") {
  allocator::ClaimRequest r;
  r.caller.tenant = std::move(tenant);
  r.region = std::move(region);
  r.pool = std::move(pool);
  return r;
}

inline allocator::Caller Tenant(std::string tenant) {
  allocator::Caller c;
  c.tenant = std::move(tenant);
  return c;
}

// Declared in the order they must die in: the allocator (and its reaper)
// first, then the registry, then the shards with their writers.
class Pool {
 public:
  explicit Pool(allocator::AllocatorOptions options = {}, int shards = 1,
                store::WriterOptions writer_options = {})
      : map_(dir_.File("pool.db"), shards) {
    store::DbOptions db_options;
    db_options.sync = store::Sync::kNormal;  // what is tested is logic, not fsync
    store::Status s = store::OpenShards(map_, db_options, writer_options, &owned_);
    INFO(s.ToString());
    REQUIRE(s.ok());
    for (auto& shard : owned_) shards_.push_back(shard.get());
    registry_ = std::make_unique<allocator::Registry>(shards_, map_);
    allocator_ = std::make_unique<allocator::Allocator>(shards_, map_, options);
  }
  ~Pool() {
    allocator_.reset();
    registry_.reset();
    owned_.clear();
  }

  allocator::Allocator& alloc() { return *allocator_; }
  allocator::Registry& registry() { return *registry_; }
  const store::ShardMap& map() const { return map_; }
  store::Shard* shard(int i) { return shards_[i]; }

  allocator::SessionResult Claim(allocator::ClaimRequest req) {
    std::promise<allocator::SessionResult> p;
    auto f = p.get_future();
    allocator_->Claim(std::move(req), [&p](allocator::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  allocator::SessionResult Release(const allocator::Caller& caller, const std::string& id,
                                   int64_t token) {
    std::promise<allocator::SessionResult> p;
    auto f = p.get_future();
    allocator_->Release(caller, id, token,
                        [&p](allocator::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  allocator::SessionResult Renew(const allocator::Caller& caller, const std::string& id,
                                 int64_t token, int64_t lease_ms = 0) {
    std::promise<allocator::SessionResult> p;
    auto f = p.get_future();
    allocator_->Renew(caller, id, token, lease_ms,
                      [&p](allocator::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  allocator::ContainerResult Register(std::vector<allocator::ContainerSpec> specs) {
    std::promise<allocator::ContainerResult> p;
    auto f = p.get_future();
    registry_->Register(std::move(specs),
                        [&p](allocator::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  // Registers and requires success.
  void Add(std::vector<allocator::ContainerSpec> specs) {
    const size_t n = specs.size();
    allocator::ContainerResult r = Register(std::move(specs));
    INFO(r.message);
    REQUIRE(r.outcome == allocator::Outcome::kOk);
    REQUIRE(r.count == static_cast<int64_t>(n));
  }
  allocator::ContainerResult Drain(const std::string& id) {
    std::promise<allocator::ContainerResult> p;
    auto f = p.get_future();
    registry_->Drain(id, [&p](allocator::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  allocator::ContainerResult Remove(const std::string& id) {
    std::promise<allocator::ContainerResult> p;
    auto f = p.get_future();
    registry_->Remove(id, [&p](allocator::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  // The container as committed now; REQUIREs that it exists.
  allocator::ContainerInfo Get(const std::string& id) {
    allocator::ContainerResult r = registry_->Get(id);
    INFO(id << ": " << r.message);
    REQUIRE(r.outcome == allocator::Outcome::kOk);
    return r.container;
  }
  // Runs `sql` (no parameters) on the writer of the shard that owns `region`:
  // for states the public API cannot make (dead, stale heartbeat).
  void Exec(const std::string& region, const std::string& sql) {
    store::Status s = shards_[map_.ShardOf(region)]->writer->RunSync(
        [&](store::Db* db) { return db->Exec(sql); });
    INFO(s.ToString());
    REQUIRE(s.ok());
  }

 private:
  TempDir dir_;
  store::ShardMap map_;
  std::vector<std::unique_ptr<store::Shard>> owned_;
  std::vector<store::Shard*> shards_;
  std::unique_ptr<allocator::Registry> registry_;
  std::unique_ptr<allocator::Allocator> allocator_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_ALLOCATOR_POOL_FIXTURE_H_
