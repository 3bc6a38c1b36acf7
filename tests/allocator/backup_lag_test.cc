// A region's designated backup on heartbeat lag (allocator/region_backups.h
// with a real Batcher): while the heartbeats of a region wait unwritten past
// --max-heartbeat-lag-ms, its claims go to its backup, and no claim hands out
// a container of the region whose latest report the server had not yet
// written; once its writes catch up and stay caught up, claims come home.
// Writes are held back by a store whose heartbeat writes of chosen
// partitions wait for the test to let them go. A region's lag is its own
// heartbeats': another region served through the same node, whose writes
// go on, stays home (SQLite shards; PostgreSQL writer lanes).

#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "allocator/allocator.h"
#include "batcher/batcher.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_storage.h"
#include "tests/support/pool_fixture.h"

namespace {

using store::Outcome;
using testing::Eventually;
using testing::Pool;
using testing::Req;
using testing::Spec;
using testing::Tenant;

constexpr int64_t kMaxLagMs = 200;

// Heartbeat writes of the held partitions wait until Unhold (a shard whose
// writer stalled); every other call goes straight through.
class HeldWrites : public testing::ForwardingStorage {
 public:
  using ForwardingStorage::ForwardingStorage;
  ~HeldWrites() override { Unhold(); }
  void Hold(std::set<int> partitions) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = std::move(partitions);
  }
  void Unhold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
    cv_.notify_all();
  }
  store::Status WriteHeartbeats(int partition, const std::vector<store::HeartbeatRow>& rows,
                                store::HeartbeatWriteResult* result) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !held_.contains(partition); });
    }
    return ForwardingStorage::WriteHeartbeats(partition, rows, result);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> held_;
};

allocator::AllocatorOptions BackupOptions(const std::string& home, const std::string& backup) {
  allocator::AllocatorOptions options;
  if (!backup.empty()) options.backup_regions = {{home, backup}};
  options.max_heartbeat_lag_ms = kMaxLagMs;
  return options;
}

// A batcher on the pool's storage, its writes holdable, wired to the
// allocator's backups; torn down in the order the threads need.
struct LagRig {
  explicit LagRig(Pool* p) : pool(p), held(&p->seam()) {
    batcher::BatcherOptions options;
    options.batch_wait_ms = 1;
    batcher = std::make_unique<batcher::Batcher>(&held, options);
    batcher->Start();
    pool->alloc().backups().SetLag(
        [b = batcher.get()](const std::string& region) { return b->RegionLagMs(region); });
    pool->alloc().backups().Start();
  }
  ~LagRig() {
    pool->alloc().backups().Stop();
    pool->alloc().backups().SetLag({});  // the batcher goes first
    held.Unhold();
    batcher->Stop();
  }
  // Queues a report of `id` saying it drains (once written, it is not
  // handed out), or that it is ready.
  void ReportDraining(const std::string& id) { Report(id, batcher::Heartbeat::State::kDraining); }
  void Report(const std::string& id, batcher::Heartbeat::State state) {
    batcher::Heartbeat h;
    h.container_id = id;
    h.state = state;
    std::vector<batcher::Heartbeat> items;
    items.push_back(std::move(h));
    REQUIRE(batcher->Submit(std::move(items)).accepted());
  }
  bool OnBackup(const std::string& region) {
    for (const auto& s : pool->alloc().backups().States()) {
      if (s.region == region) return s.on_backup;
    }
    return false;
  }

  Pool* pool;
  HeldWrites held;
  std::unique_ptr<batcher::Batcher> batcher;
};

// Claims `region` and releases at once; the session as the claim gave it.
store::SessionResult ClaimAndRelease(Pool& pool, const std::string& region) {
  store::SessionResult r = pool.Claim(Req(region));
  if (r.outcome == Outcome::kOk) {
    REQUIRE(pool.Release(Tenant("t1"), r.session.session_id, r.session.token).outcome ==
            Outcome::kOk);
  }
  return r;
}

// Holds `held` partitions' writes with a report of home-0 queued, waits for
// home's lag to pass the bound, and checks every claim of home then: served
// by the backup, never home-0. Then lets the writes go and waits for claims
// to come home (home-1: home-0's report, now written, says it drains).
void GoesToBackupAndBack(Pool& pool, LagRig& rig, const std::string& home,
                         const std::string& backup, std::set<int> held,
                         const std::function<void()>& while_held = {}) {
  store::SessionResult r = ClaimAndRelease(pool, home);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.session.region == home);
  CHECK(r.served_by == "home");

  rig.held.Hold(std::move(held));
  rig.ReportDraining(home + "-0");
  rig.ReportDraining(home + "-1");
  REQUIRE(Eventually([&] { return rig.batcher->RegionLagMs(home) > kMaxLagMs; }));
  // At once: a claim samples its region's lag itself.
  for (int i = 0; i < 6; ++i) {
    r = ClaimAndRelease(pool, home);
    INFO("claim " << i << ": " << r.message);
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.session.region == backup);
    CHECK(r.served_by == "backup");
    CHECK(r.session.container_id != home + "-0");
  }
  // Within a refresh the thread has it on the backup too (the dashboard's).
  CHECK(Eventually([&] { return rig.OnBackup(home); }));
  if (while_held) while_held();

  rig.held.Unhold();
  REQUIRE(Eventually([&] { return rig.batcher->RegionLagMs(home) == 0; }));
  // Home again once the lag stayed at most half the bound for the bound's time.
  CHECK(Eventually([&] { return !rig.OnBackup(home); }));
  pool.Add({Spec(home + "-2", home)});
  r = ClaimAndRelease(pool, home);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.session.container_id == home + "-2");  // the written reports took -0 and -1 out
  CHECK(r.served_by == "home");
}

// Two region names whose shards differ in `map`.
std::pair<std::string, std::string> RegionsOnTwoShards(const store::ShardMap& map) {
  for (int i = 0; i < 64; ++i) {
    const std::string a = "home" + std::to_string(i);
    for (int j = 0; j < 64; ++j) {
      const std::string b = "bk" + std::to_string(j);
      if (map.ShardOf(a) != map.ShardOf(b)) return {a, b};
    }
  }
  FAIL("no two regions on different shards");
  return {};
}

// The first `n` ids `prefix`k whose partition is `partition` (or, with
// `other`, any but it): PostgreSQL spreads a node's containers over its
// writers by id.
std::vector<std::string> IdsOnPartition(store::Storage& seam, const std::string& prefix,
                                        int partition, bool other, size_t n) {
  std::vector<std::string> ids;
  for (int k = 0; ids.size() < n && k < 1000; ++k) {
    const std::string id = prefix + std::to_string(k);
    int p = -1;
    REQUIRE(seam.PartitionOf(id, &p).ok());
    if ((p == partition) != other) ids.push_back(id);
  }
  REQUIRE(ids.size() == n);
  return ids;
}

}  // namespace

TEST_CASE("backup region: claims go to the backup while the region's heartbeats lag, and "
          "come back once they are written") {
  Pool pool(EDGEALLOC_ENGINES, BackupOptions("home", "bk"));
  pool.Add({Spec("home-0", "home"), Spec("home-1", "home"), Spec("bk-0", "bk")});
  LagRig rig(&pool);
  std::set<int> all;
  for (int p = 0; p < pool.seam().partitions(); ++p) all.insert(p);
  // On PostgreSQL a region's heartbeats go through every writer of the node.
  GoesToBackupAndBack(pool, rig, "home", "bk", all);
  CHECK(pool.alloc().stats().served_backup.load() >= 6);
}

TEST_CASE("backup region: with SQLite shards, one shard held back while the other serves") {
  // Not a structured binding: the lambda below captures both, which clang 14
  // (the sanitizer trees) refuses of bindings.
  const auto regions = RegionsOnTwoShards(store::ShardMap("probe.db", 2));
  const std::string home = regions.first, backup = regions.second;
  Pool pool(BackupOptions(home, backup), /*shards=*/2);
  pool.Add({Spec(home + "-0", home), Spec(home + "-1", home), Spec(backup + "-0", backup)});
  LagRig rig(&pool);
  const int home_shard = pool.map().ShardOf(home);
  GoesToBackupAndBack(pool, rig, home, backup, {home_shard}, [&] {
    // Meanwhile the backup's shard writes its heartbeats: its region does not lag.
    const uint64_t written = rig.batcher->stats().written.load();
    rig.Report(backup + "-0", batcher::Heartbeat::State::kReady);
    CHECK(Eventually([&] { return rig.batcher->stats().written.load() > written; }));
    CHECK(Eventually([&] { return rig.batcher->RegionLagMs(backup) == 0; }));
    CHECK(rig.batcher->RegionLagMs(home) > kMaxLagMs);
    CHECK_FALSE(rig.OnBackup(backup));
  });
}

TEST_CASE("backup region: a region without a backup serves itself whatever its lag") {
  Pool pool(EDGEALLOC_ENGINES, BackupOptions("home", ""));
  pool.Add({Spec("home-0", "home"), Spec("bk-0", "bk")});
  LagRig rig(&pool);
  std::set<int> all;
  for (int p = 0; p < pool.seam().partitions(); ++p) all.insert(p);
  rig.held.Hold(all);
  rig.ReportDraining("home-0");
  REQUIRE(Eventually([&] { return rig.batcher->RegionLagMs("home") > kMaxLagMs; }));
  const store::SessionResult r = ClaimAndRelease(pool, "home");
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.session.region == "home");
  CHECK(r.served_by == "home");
}

TEST_CASE("backup region: on PostgreSQL, one node's regions lag apart: one region's writes held "
          "back while another's are written") {
  if (!testing::EngineWanted("postgres")) return;
  allocator::AllocatorOptions options;
  options.backup_regions = {{"a", "bk"}, {"b", "bk"}};
  options.max_heartbeat_lag_ms = kMaxLagMs;
  Pool pool("postgres", options);
  REQUIRE(pool.seam().partitions() > 1);
  // Both regions' heartbeats go through this one node; a's through one
  // writer, b's through the others.
  const int held = 0;
  const std::vector<std::string> a = IdsOnPartition(pool.seam(), "a-", held, false, 2);
  const std::vector<std::string> b = IdsOnPartition(pool.seam(), "b-", held, true, 2);
  pool.Add({Spec(a[0], "a"), Spec(a[1], "a"), Spec(b[0], "b"), Spec(b[1], "b"),
            Spec("bk-0", "bk")});
  LagRig rig(&pool);
  // Written once first: the node learns each container's region from its writes.
  const uint64_t first = rig.batcher->stats().written.load();
  for (const std::string& id : {a[0], a[1], b[0], b[1]}) {
    rig.Report(id, batcher::Heartbeat::State::kReady);
  }
  REQUIRE(Eventually([&] { return rig.batcher->stats().written.load() >= first + 4; }));

  rig.held.Hold({held});
  rig.ReportDraining(a[0]);
  REQUIRE(Eventually([&] { return rig.batcher->RegionLagMs("a") > kMaxLagMs; }));
  // b's reports go on being written while a's wait.
  const uint64_t written = rig.batcher->stats().written.load();
  rig.ReportDraining(b[0]);
  REQUIRE(Eventually([&] { return rig.batcher->stats().written.load() > written; }));
  CHECK(Eventually([&] { return rig.batcher->RegionLagMs("b") == 0; }));
  // A write of b's slower than the bound (a loaded machine) sends b to its
  // backup until it stayed caught up for the bound's time (hysteresis).
  CHECK(Eventually([&] { return !rig.OnBackup("b"); }));
  CHECK(rig.batcher->RegionLagMs("a") > kMaxLagMs);
  for (int i = 0; i < 4; ++i) {
    store::SessionResult r = ClaimAndRelease(pool, "a");
    INFO("claim of a " << i << ": " << r.message);
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.served_by == "backup");
    CHECK(r.session.region == "bk");
    r = ClaimAndRelease(pool, "b");
    INFO("claim of b " << i << ": " << r.message);
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.served_by == "home");
    CHECK(r.session.container_id == b[1]);  // b[0]'s written report drains it
  }
  CHECK(Eventually([&] { return rig.OnBackup("a"); }));
  CHECK_FALSE(rig.OnBackup("b"));

  rig.held.Unhold();
  REQUIRE(Eventually([&] { return rig.batcher->RegionLagMs("a") == 0; }));
  CHECK(Eventually([&] { return !rig.OnBackup("a"); }));
  const store::SessionResult r = ClaimAndRelease(pool, "a");
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.served_by == "home");
  CHECK(r.session.container_id == a[1]);
}
