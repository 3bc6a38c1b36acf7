#ifndef EDGEALLOC_TESTS_SUPPORT_POOL_FIXTURE_H_
#define EDGEALLOC_TESTS_SUPPORT_POOL_FIXTURE_H_

// A pool for the allocator/ and engine tests: storage and an Allocator on
// it, and synchronous wrappers (a promise per call) around their callbacks.
// Either SQLite shards opened with store::OpenShards in a TempDir (the
// SQLite-only cases: several shards, writer options, a shard's internals),
// or either engine opened through store::OpenStorage as the server does:
//   Pool pool(EDGEALLOC_ENGINES, options, policy);
// runs the test case once on SQLite and once on PostgreSQL (a server the
// test binary starts on first use: tests/support/engines.h).

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "allocator/allocator.h"
#include "store/sqlite/db.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_map.h"
#include "store/sqlite/sqlite_storage.h"
#include "store/storage.h"
#include "store/types.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"
#include "tests/support/temp_dir.h"

namespace testing {

inline store::ClaimPolicy Policy(int candidates, int64_t max_sessions_per_tenant = store::kUnlimited) {
  store::ClaimPolicy p;
  p.candidates = candidates;
  p.max_sessions_per_tenant = max_sessions_per_tenant;
  return p;
}

// Declared in the order they must die in: the allocator (and its reaper)
// first, then the storage, then the shards with their writers.
class Pool {
 public:
  explicit Pool(allocator::AllocatorOptions options = {}, int shards = 1,
                store::WriterOptions writer_options = {}, store::ClaimPolicy policy = {})
      : map_(dir_.File("pool.db"), shards) {
    store::DbOptions db_options;
    db_options.sync = store::Sync::kNormal;  // what is tested is logic, not fsync
    store::Status s = store::OpenShards(map_, db_options, writer_options, &owned_);
    INFO(s.ToString());
    REQUIRE(s.ok());
    for (auto& shard : owned_) shards_.push_back(shard.get());
    auto sqlite = std::make_unique<store::SqliteStorage>(shards_, map_, policy);
    sqlite_ = sqlite.get();
    storage_ = std::move(sqlite);
    allocator_ = std::make_unique<allocator::Allocator>(storage_.get(), options);
  }
  // "sqlite" or "postgres", opened through store::OpenStorage.
  Pool(const std::string& engine, allocator::AllocatorOptions options = {},
       store::ClaimPolicy policy = {})
      : map_(dir_.File("pool.db"), 1), engine_(std::make_unique<Engine>(engine, policy)) {
    storage_ = std::move(engine_->storage);
    allocator_ = std::make_unique<allocator::Allocator>(storage_.get(), options);
  }
  ~Pool() {
    allocator_.reset();
    storage_.reset();
    owned_.clear();
  }

  allocator::Allocator& alloc() { return *allocator_; }
  store::Storage& seam() { return *storage_; }
  // The SQLite-only accessors: a pool made of shards.
  store::SqliteStorage& storage() {
    REQUIRE(sqlite_ != nullptr);
    return *sqlite_;
  }
  const store::ShardMap& map() const { return map_; }
  store::Shard* shard(int i) {
    REQUIRE(sqlite_ != nullptr);
    return shards_[i];
  }
  // "sqlite" or "postgres".
  std::string engine() const { return engine_ != nullptr ? engine_->engine : "sqlite"; }

  store::SessionResult Claim(store::ClaimRequest req) {
    std::promise<store::SessionResult> p;
    auto f = p.get_future();
    allocator_->Claim(std::move(req), [&p](store::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  store::SessionResult Release(const store::Caller& caller, const std::string& id,
                                   int64_t token) {
    std::promise<store::SessionResult> p;
    auto f = p.get_future();
    allocator_->Release(caller, id, token,
                        [&p](store::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  store::SessionResult Renew(const store::Caller& caller, const std::string& id,
                                 int64_t token, int64_t lease_ms = 0) {
    std::promise<store::SessionResult> p;
    auto f = p.get_future();
    allocator_->Renew(caller, id, token, lease_ms,
                      [&p](store::SessionResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  store::ContainerResult Register(std::vector<store::ContainerSpec> specs) {
    std::promise<store::ContainerResult> p;
    auto f = p.get_future();
    storage_->Register(std::move(specs),
                        [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  // Registers and requires success.
  void Add(std::vector<store::ContainerSpec> specs) {
    const size_t n = specs.size();
    store::ContainerResult r = Register(std::move(specs));
    INFO(r.message);
    REQUIRE(r.outcome == store::Outcome::kOk);
    REQUIRE(r.count == static_cast<int64_t>(n));
  }
  store::ContainerResult Drain(const std::string& id) {
    std::promise<store::ContainerResult> p;
    auto f = p.get_future();
    storage_->Drain(id, [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  store::ContainerResult Remove(const std::string& id) {
    std::promise<store::ContainerResult> p;
    auto f = p.get_future();
    storage_->Remove(id, [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
    return f.get();
  }
  // The container as committed now; REQUIREs that it exists.
  store::ContainerInfo Get(const std::string& id) {
    store::ContainerResult r = storage_->GetContainer(id);
    INFO(id << ": " << r.message);
    REQUIRE(r.outcome == store::Outcome::kOk);
    return r.container;
  }
  // Runs `sql` (no parameters, in the dialect both engines share) on the
  // database that holds `region`: for states the public API cannot make
  // (dead, stale heartbeat). Shards: through the shard's writer; an engine:
  // on a connection of the test's own.
  void Exec(const std::string& region, const std::string& sql) {
    store::Status s;
    if (engine_ == nullptr) {
      s = shards_[map_.ShardOf(region)]->writer->RunSync(
          [&](store::Db* db) { return db->Exec(sql); });
    } else if (engine_->engine == "postgres") {
      PgServer::Query(engine_->db, sql);
    } else {
      std::unique_ptr<store::Db> db;
      store::DbOptions db_options;
      db_options.sync = store::Sync::kNormal;
      s = store::Db::Open(engine_->db, db_options, &db);
      if (s.ok()) s = db->Exec(sql);
    }
    INFO(s.ToString());
    REQUIRE(s.ok());
  }

 private:
  TempDir dir_;
  store::ShardMap map_;
  std::vector<std::unique_ptr<store::Shard>> owned_;
  std::vector<store::Shard*> shards_;
  std::unique_ptr<Engine> engine_;  // an engine's pool; its storage moved to storage_
  std::unique_ptr<store::Storage> storage_;
  store::SqliteStorage* sqlite_ = nullptr;  // storage_, for a pool of shards
  std::unique_ptr<allocator::Allocator> allocator_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_POOL_FIXTURE_H_
