#ifndef EDGEALLOC_STORE_SQLITE_SQLITE_STORAGE_H_
#define EDGEALLOC_STORE_SQLITE_SQLITE_STORAGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/sqlite/registration_gate.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_id_cache.h"
#include "store/sqlite/shard_map.h"
#include "store/storage.h"

namespace store {

// The SQLite engine of the storage seam (store/storage.h). A partition is a
// shard: one SQLite file in WAL mode with its one Writer (group commit) and
// its pool of read-only connections; --shards N splits the pool over N files
// by region (ShardMap). Every statement it runs is in sqlite/lifecycle_sql.h
// (the heartbeat rows' in sqlite/heartbeat_sql.h).
// Its members are defined by topic, each group below in the file its
// comment names: sqlite_storage.cc (opening, the writers) and
// sqlite_storage_<topic>.cc for sessions, containers, pools, heartbeats,
// sweeps, claim_counts and clock_shift. Two collaborators it owns have
// headers of their own: the container -> shard cache (ShardIdCache) and the
// one-registration-at-a-time gate (RegistrationGate).
class SqliteStorage : public Storage {
 public:
  // sqlite_storage.cc
  // Opens (creating, migrating) every shard of `options` and starts their
  // writers; the storage owns them.
  static Status Open(const StorageOptions& options, std::unique_ptr<SqliteStorage>* out);
  // Over shards opened elsewhere (tests, benches, tools), which must outlive
  // it, their writers started. REQUIRES: shards.size() == map.shards().
  SqliteStorage(std::vector<Shard*> shards, ShardMap map, ClaimPolicy policy);
  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;
  // Stops the writers of the shards it owns.
  ~SqliteStorage() override;

  // sqlite_storage_sessions.cc
  void Claim(ClaimRequest req, SessionCallback done) override;
  void Release(const Caller& caller, std::string session_id, int64_t token,
               SessionCallback done) override;
  using Storage::Renew;
  void Renew(const Caller& caller, std::string session_id, int64_t token, int64_t lease_ms,
             bool shorten, SessionCallback done) override;
  SessionResult GetSession(const Caller& caller, std::string_view session_id) override;
  Status ListSessions(const SessionFilter& filter, const std::string& after, int limit,
                      std::vector<Session>* page, std::string* next_after) override;
  Status ListEndedSessions(const SessionFilter& filter, const std::string& after, int limit,
                           std::vector<EndedSession>* page, std::string* next_after) override;
  Status CountTenantSessions(const std::string& tenant, int64_t* sessions) override {
    return SessionsElsewhere(tenant, /*shard=*/-1, sessions);  // -1: no shard left out
  }

  // sqlite_storage_containers.cc (ProbePools: sqlite_storage_pools.cc)
  void Register(std::vector<ContainerSpec> specs, ContainerCallback done) override;
  ContainerResult GetContainer(std::string_view id) override;
  Status ProbePools(std::vector<PoolProbe>* pools) override;
  Status ListContainers(const ContainerFilter& filter, const std::string& after, int limit,
                        std::vector<ContainerInfo>* page, std::string* next_after) override;
  void Drain(std::string id, ContainerCallback done) override;
  void Undrain(std::string id, ContainerCallback done) override;
  void Remove(std::string id, ContainerCallback done) override;

  // sqlite_storage_heartbeats.cc
  int partitions() const override { return map_.shards(); }
  std::vector<int> PartitionsOfRegion(const std::string& region) const override {
    return {map_.ShardOf(region)};
  }
  Status PartitionOf(const std::string& container_id, int* partition) override;
  Status WriteHeartbeats(int partition, const std::vector<HeartbeatRow>& rows,
                         HeartbeatWriteResult* result) override;

  // sqlite_storage_sweeps.cc
  Status SweepExpiredLeases(int partition, int max_rows, int64_t* ended) override;
  Status SweepSilentContainers(int partition, const std::function<int64_t()>& cutoff_ms,
                               const HeldPools& held, int max_rows, SilenceSweep* sweep) override;
  Status CountSilent(int64_t cutoff_ms, std::vector<PoolSilence>* silent) override;
  Status PruneSessionHistory(int partition, int64_t history_ms, int64_t max_history_rows,
                             int max_rows, int64_t* pruned) override;

  // sqlite_storage_events.cc
  int event_streams() const override { return map_.shards(); }
  Status ReadEvents(const EventQuery& query, const EventCursor& after, EventPage* page) override;
  Status PruneEvents(int partition, int64_t retention_ms, int max_rows,
                     int64_t* pruned) override;
  CommitSignal* commit_signal() override { return &commit_signal_; }

  // sqlite_storage_webhooks.cc
  Status LeaseWebhook(const std::string& tenant, const std::string& owner, int64_t lease_ms,
                      bool* held, std::string* cursor) override;
  Status AckWebhook(const std::string& tenant, const std::string& owner,
                    const std::string& cursor, int64_t lease_ms, bool* held) override;

  // sqlite_storage_claim_counts.cc
  Status PublishClaimCounts(const std::string& node_id, const std::vector<PoolClaimTally>& counts,
                            int64_t prune_after_ms, int max_pruned) override;
  Status ReadFleetClaimCounts(int64_t window_ms, FleetClaimCounts* fleet) override;

  // sqlite_storage.cc (clock_steps: sqlite_storage_clock_shift.cc)
  std::unique_ptr<CapacityReader> NewCapacityReader(int partition, int busy_timeout_ms) override;
  const WriterStats& writer_stats(int partition) const override;
  std::optional<uint64_t> clock_steps() const override;
  const ClaimPolicy& policy() const override { return policy_; }
  void StopWriters() override;

  const ShardMap& map() const { return map_; }
  Shard* shard(int i) { return shards_[static_cast<size_t>(i)]; }

  // A heartbeat batch of at most this many rows rides in the shard writer's
  // group commit beside the claims, under a savepoint of its own, sharing
  // the group's fsync (docs/design.md's "<= 100 rows a transaction" keeps
  // its purpose: no long hold of the write lock in one piece); a larger one
  // gets a transaction of its own.
  static constexpr size_t kMaxRidingRows = 100;

 private:
  struct ClaimAttempt;
  class ClaimJob;
  class SessionCasJob;

  // sqlite_storage_sessions.cc, with the jobs ClaimJob and SessionCasJob.
  // Runs the claim for the regions of attempt from `first` that share its
  // shard; the job goes on to the next shard's regions if nothing fitted.
  void RunClaim(std::shared_ptr<ClaimAttempt> attempt, size_t first);
  // With several shards: the live session of the request's idempotency key
  // in any shard, into *found (outcome kReplayed), from committed state.
  Status FindIdempotentSession(const ClaimRequest& req, SessionResult* found);
  // The tenant's sessions in every shard but `shard` (its quota share there).
  Status SessionsElsewhere(const std::string& tenant, int shard, int64_t* count);
  enum class CasKind { kRelease, kRenew, kRenewShorten };
  void RunSessionCas(CasKind kind, const Caller& caller, std::string session_id, int64_t token,
                     int64_t lease_ms, SessionCallback done);

  // sqlite_storage_clock_shift.cc: the wall clock's steps
  // (store/clock_steps.h). Each shard's stored instants (lease ends,
  // heartbeats) are shifted by every step found, in a transaction of the
  // shard's writer (ApplyClockShift), at the start of each sweep and
  // heartbeat write; until then ShardNow reads the clock as it was before
  // the steps not yet applied, so a decision never compares a stepped clock
  // with unshifted rows.
  struct ShardClock {
    std::atomic<int64_t> shifted_ms{0};  // the steps (Reading::stepped_ms) applied
    std::atomic<uint64_t> shifting{0};   // odd while a shift commits (readers wait)
  };
  class ClockShiftJob;
  // Now, on the shard's stored timeline. On the writer thread it matches the
  // rows; a reader goes through ReadAtShardNow.
  int64_t ShardNow(int shard) const;
  // Runs read(db, now) on the shard's reader until no shift committed while
  // it ran (the rows and `now` are then on one timeline).
  Status ReadAtShardNow(int shard, const std::function<Status(Db*, int64_t)>& read);
  // Shifts the shard's instants by the steps found and not applied yet, and
  // says so. Never from a writer thread.
  Status ApplyClockShift(int shard);
  // The reaper's cutoff (read on this node's wall clock), on the shard's
  // timeline; Busy if the clock stepped while it was read.
  Status ShardCutoff(int shard, const std::function<int64_t()>& cutoff_ms, int64_t* cutoff);

  // sqlite_storage_containers.cc
  // Sets *shard to the shard holding `id`, or -1. Reads every shard unless
  // `cached` and the id is in shard_of_id_. A failed read is returned as it is.
  Status FindShard(const std::string& id, bool cached, int* shard);
  // The highest token floor of all shards (sqlite/schema.cc, version 4).
  Status HighestTokenFloor(int64_t* floor);
  // Runs `work` (one statement at most that writes: no savepoint) at the
  // writer of the shard holding `id`; if none, or if looking failed,
  // answers `done` at once.
  void WriteContainer(const std::string& id, ContainerCallback done,
                      std::function<Status(Db*, ContainerResult*)> work);
  // Drain and Undrain: `statement` (kDrain, kUndrain) on `id`, answered
  // with the container as it left it.
  void ChangeDrain(std::string id, const char* statement, ContainerCallback done);

  std::vector<std::unique_ptr<Shard>> owned_;
  std::vector<Shard*> shards_;
  const ShardMap map_;
  const ClaimPolicy policy_;
  std::string program_ = "edgealloc";
  std::vector<std::unique_ptr<ShardClock>> clocks_;  // one a shard
  std::function<void(const std::string&)> warn_;
  CommitSignal commit_signal_;  // every shard writer's commits

  // Several shards: the container -> shard cache of FindShard
  // (sqlite_storage_containers.cc), which WriteHeartbeats clears of ids found
  // unknown (sqlite_storage_heartbeats.cc).
  ShardIdCache shard_of_id_;
  // Several shards: one registration at a time (sqlite_storage_containers.cc).
  RegistrationGate registration_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SQLITE_STORAGE_H_
