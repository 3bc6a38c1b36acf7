#ifndef EDGEALLOC_STORE_POSTGRES_POSTGRES_STORAGE_H_
#define EDGEALLOC_STORE_POSTGRES_POSTGRES_STORAGE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/list_page.h"
#include "store/postgres/db_clock.h"
#include "store/postgres/deferred_heartbeats.h"
#include "store/postgres/event_listener.h"
#include "store/postgres/fence.h"
#include "store/postgres/pg.h"
#include "store/postgres/pg_writer.h"
#include "store/postgres/readers.h"
#include "store/storage.h"

namespace store {

// True if `db` names a PostgreSQL database (a postgresql:// or postgres://
// URI, or libpq key=value words) rather than an SQLite file.
bool IsPostgresUri(std::string_view db);

// The PostgreSQL engine of the storage seam (store/storage.h), for several
// edgealloc nodes on one database. A node has StorageOptions::pg_writers
// PgWriters (group commit, each on a connection of its own) and a pool of
// connections for the reads. Partition p is writer p: the heartbeats and
// dead-container sweeps of the containers whose LaneHash % partitions is p
// (store/postgres/lane.h), so that several batches commit at once; every
// session and container write goes through writer 0, whose groups then
// share a commit. Its members are defined by topic, each group below in the
// file its comment names: postgres_storage.cc (opening, the writers, the
// reads' PgReaderPool of readers.h) and postgres_storage_<topic>.cc for
// sessions, containers, pools, heartbeats, heard, sweeps and claim_counts;
// their statements by the job that runs them (lifecycle_sql.h says which
// file has which). Its collaborators have headers of their own: each
// partition's DeferredHeartbeats, the PgWriters, the PgReaderPool, the
// PgFence and the DbClockSteps. Any number of nodes may run on one
// database: claims lock their candidates FOR UPDATE SKIP LOCKED, a tenant's
// quota is counted under an advisory lock, idempotency keys are a unique
// index whose claims take the key's advisory lock before their group
// starts, and sweeps skip rows another node holds.
class PostgresStorage : public Storage {
 public:
  // postgres_storage.cc
  // Connects (a clear IOError if the server is unreachable), creates or
  // migrates the schema, starts the writer.
  static Status Open(const StorageOptions& options, std::unique_ptr<PostgresStorage>* out);
  PostgresStorage(const PostgresStorage&) = delete;
  PostgresStorage& operator=(const PostgresStorage&) = delete;
  ~PostgresStorage() override;

  // postgres_storage_sessions.cc
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
  Status CountTenantSessions(const std::string& tenant, int64_t* sessions) override;

  // postgres_storage_containers.cc (ProbePools: postgres_storage_pools.cc)
  void Register(std::vector<ContainerSpec> specs, ContainerCallback done) override;
  ContainerResult GetContainer(std::string_view id) override;
  Status ProbePools(std::vector<PoolProbe>* pools) override;
  Status ListContainers(const ContainerFilter& filter, const std::string& after, int limit,
                        std::vector<ContainerInfo>* page, std::string* next_after) override;
  void Drain(std::string id, ContainerCallback done) override;
  void Undrain(std::string id, ContainerCallback done) override;
  void Remove(std::string id, ContainerCallback done) override;

  // postgres_storage_heartbeats.cc
  int partitions() const override { return static_cast<int>(writers_.size()); }
  // LaneOf the id, known or not (an unknown one is found at write time).
  Status PartitionOf(const std::string& container_id, int* partition) override;
  // Rows another transaction held locked are kept and written with the
  // partition's next batch, or by its next silence sweep
  // (HeartbeatWriteResult::skipped).
  Status WriteHeartbeats(int partition, const std::vector<HeartbeatRow>& rows,
                         HeartbeatWriteResult* result) override;

  // postgres_storage_sweeps.cc (OldestHeldBackMs: postgres_storage_heartbeats.cc)
  Status SweepExpiredLeases(int partition, int max_rows, int64_t* ended) override;
  Status SweepSilentContainers(int partition, const std::function<int64_t()>& cutoff_ms,
                               const HeldPools& held, int max_rows, SilenceSweep* sweep) override;
  Status CountSilent(int64_t cutoff_ms, std::vector<PoolSilence>* silent) override;
  int64_t OldestHeldBackMs(int partition) override;
  // postgres_storage_heard.cc: as node_id_, on a pooled connection
  // (schema_sql.h kNodeHeardUntil).
  Status PublishHeardUntil(const std::vector<int64_t>& heard_until_ms,
                           int64_t dead_after_ms) override;
  Status PruneSessionHistory(int partition, int64_t history_ms, int64_t max_history_rows,
                             int max_rows, int64_t* pruned) override;

  // postgres_storage_claim_counts.cc
  Status PublishClaimCounts(const std::string& node_id, const std::vector<PoolClaimTally>& counts,
                            int64_t prune_after_ms, int max_pruned) override;
  Status ReadFleetClaimCounts(int64_t window_ms, FleetClaimCounts* fleet) override;
  Status PublishTenantLimits(const std::string& node_id,
                             const std::vector<TenantLimitsDigest>& mine, int64_t window_ms,
                             std::vector<TenantLimitsDigest>* fleet) override;

  // postgres_storage.cc
  std::unique_ptr<CapacityReader> NewCapacityReader(int partition, int busy_timeout_ms) override;
  const WriterStats& writer_stats(int partition) const override {
    return writers_[static_cast<size_t>(partition)]->stats();
  }
  // Steps of the database's clock this node shifted the stored instants
  // for (db_clock.h).
  std::optional<uint64_t> clock_steps() const override { return clock_steps_->applied(); }
  const ClaimPolicy& policy() const override { return policy_; }
  FenceStats fence_stats() const override {
    return {true, fence_->seen().epoch, fence_->refusals()};
  }
  void StopWriters() override;

  // postgres_storage_events.cc
  Status ReadEvents(const EventQuery& query, const EventCursor& after, EventPage* page) override;
  Status PruneEvents(int partition, int64_t retention_ms, int max_rows,
                     int64_t* pruned) override;
  CommitSignal* commit_signal() override { return &commit_signal_; }

  // postgres_storage_webhooks.cc
  Status LeaseWebhook(const std::string& tenant, const std::string& owner, int64_t lease_ms,
                      bool* held, std::string* cursor) override;
  Status AckWebhook(const std::string& tenant, const std::string& owner,
                    const std::string& cursor, int64_t lease_ms, bool* held) override;

 private:
  // postgres_storage.cc
  PostgresStorage(const StorageOptions& options);
  // Runs `fn` on a read connection of readers_, unless the writers find the
  // database unreachable.
  Status WithReader(const std::function<Status(PgConn*)>& fn);
  // A list's page (ListSessions, ListEndedSessions, ListContainers) of at
  // most `limit` items and about `budget_bytes`, in `order`: on a reader,
  // `run(conn, bounds, &r)` runs the list statement with the walk's
  // parameters (WithWalkParams), `read(r)` makes its rows the one
  // partition's share (ListedPage), and MergePartitionPages the page.
  template <typename Row, typename Run, typename Read>
  Status ListPage(int limit, size_t budget_bytes, KeyOrder order, Run run, Read read,
                  std::vector<Row>* page, std::string* next_after);
  // Queues a job of `work` filling a Result; a refused one answers at once.
  // `lock_keys`: the advisory locks (pgsql::kLockTenant's keys) `work` needs
  // held; the writer takes them before the group's statements
  // (PgJob::AddLockKeys). `first`: the statement `work` runs first, if known
  // now, which the writer then sends ahead (PgJob::First). `rows`: the
  // containers `work` will change, by id and by session id, which the writer
  // locks in one order (PgJob::AddRowLocks).
  template <typename Result>
  void Submit(std::function<Status(PgConn*, Result*)> work, std::function<void(Result)> done,
              std::vector<std::string> lock_keys = {},
              std::optional<PgStatement> first = std::nullopt,
              PgRowLocks rows = {});
  // postgres_storage_heartbeats.cc: one batch as one job of the partition's
  // writer.
  Status WriteRows(int partition, const std::vector<HeartbeatRow>& rows,
                   HeartbeatWriteResult* result);
  // Ends the partition's write (DeferredHeartbeats::End) and gives its
  // writer's gauges the rows skipped and deferred.
  void EndHeartbeatWrite(int partition, const std::vector<HeartbeatRow>& batch, size_t taken,
                         const Status& s, const HeartbeatWriteResult& result);
  // Writes the partition's deferred rows, unless a write is under way (it
  // takes them). The reaper's, before it judges silence.
  void FlushDeferredHeartbeats(int partition);
  // postgres_storage_sweeps.cc: a sweep's check of the database's clock.
  struct SweepClock;
  // postgres_storage_heard.cc: the dead_after_ms the reaper last published
  // with, else the policy's.
  int64_t DeadAfterMs() const;
  // postgres_storage_containers.cc: Drain and Undrain, `statement`
  // (pgsql::kDrain, kUndrain) on `id`, answered with the container as it
  // left it.
  void ChangeDrain(std::string id, const char* statement, ContainerCallback done);
  // postgres_storage_sweeps.cc: PruneEvents and PruneSessionHistory, which
  // are not partitioned: on partition 0, writer 0 runs `statement` (a DELETE
  // that answers its count) alone; other partitions prune nothing.
  Status PruneOnFirstWriter(int partition, const char* statement,
                            const std::vector<PgParam>& params, int64_t* pruned);

  const std::string uri_;
  const std::string program_;
  const ClaimPolicy policy_;
  // This storage's name in node_heard_until: the program and random bits,
  // new at each start.
  const std::string node_id_;
  std::atomic<int64_t> dead_after_ms_{0};
  // Every connection's, writers and readers: no connect to an old primary.
  const std::shared_ptr<PgFence> fence_;
  // Steps of the database's clock, seen by every writer's readings.
  const std::shared_ptr<DbClockSteps> clock_steps_;
  // [0] also writes sessions and containers; each is one partition.
  std::vector<std::unique_ptr<PgWriter>> writers_;
  // One a partition: its rows skipped for a row lock, and its one write.
  std::vector<std::unique_ptr<DeferredHeartbeats>> deferred_;
  PgReaderPool readers_;
  // This node's writers' commits, and every node's that wrote events
  // (listener_).
  CommitSignal commit_signal_;
  std::unique_ptr<PgEventListener> listener_;
};

template <typename Row, typename Run, typename Read>
Status PostgresStorage::ListPage(int limit, size_t budget_bytes, KeyOrder order, Run run,
                                 Read read, std::vector<Row>* page, std::string* next_after) {
  page->clear();
  next_after->clear();
  const PageBounds bounds{limit, ListExamineBound(limit), budget_bytes};
  return WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(run(conn, bounds, &r));
    MergePartitionPages(read(r), bounds, page, next_after, order);
    return Status::Ok();
  });
}

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_POSTGRES_STORAGE_H_
