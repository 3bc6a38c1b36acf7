#ifndef EDGEALLOC_STORE_STORAGE_H_
#define EDGEALLOC_STORE_STORAGE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/events.h"
#include "store/status.h"
#include "store/types.h"
#include "store/writer_stats.h"

namespace store {

// A CapacityReader reads one partition's capacity counts for the mirror
// (kvmirror/), on a connection of its own that never writes. Owned and used
// by one thread at a time.
class CapacityReader {
 public:
  virtual ~CapacityReader() = default;
  // Fills *read (cleared first) with the partition's containers by region,
  // pool and status (and of them how many an operator drained), and the ids
  // under an operator's drain, as committed when the read began, and sets
  // *unchanged false; or, when the engine can tell that nothing was committed
  // since this reader's previous successful Read, sets *unchanged and leaves
  // *read alone (the previous read is still current). After an error the
  // next Read starts afresh (a new connection: no stale state survives).
  virtual Status Read(CapacityRead* read, bool* unchanged) = 0;
  // Where it reads, for error messages: a file path, a database name.
  virtual std::string name() const = 0;
};

// The most rows one partition examines for a page of `limit` items of a list
// (ListSessions, ListContainers): four a wanted item, and never fewer than
// kListExamineFloor, so a filter that keeps one row in four still fills its
// page in one request, and a page costs about what a full page of 1,000
// costs (about a millisecond on SQLite), however many rows the filters
// reject. Past it a list answers with what it found and a cursor.
inline constexpr int kListExamineFloor = 1000;
inline constexpr int kListExaminePerItem = 4;
inline int64_t ListExamineBound(int limit) {
  const int64_t wanted = static_cast<int64_t>(limit) * kListExaminePerItem;
  return wanted > kListExamineFloor ? wanted : kListExamineFloor;
}

// The most rows one PublishClaimCounts writes: a node counts at most 4096
// pools one by one (allocator::kMaxCountedPools), and its totals.
inline constexpr size_t kMaxPublishedTallies = 4097;

// The storage seam: everything the rest of the program needs from storage,
// and nothing of how an engine does it. The session lifecycle (claim, renew,
// release, expire, die, drain, delete) lives behind it, written once per
// engine: docs/design.md has the state machine and the rules every engine
// keeps (a claim is one atomic statement; every session operation is a
// compare-and-swap on the fencing token; a heartbeat never undoes a claim).
//
// A Storage is split into partitions, each with its own write queue and one
// writer that commits in groups; a container's heartbeats and sweeps belong
// to exactly one (PartitionOf). (SQLite: one file a partition, by region,
// sessions included; PostgreSQL: one writer connection a partition,
// containers spread by a hash of their id, sessions all through the first.)
// Every method is safe from any thread. Asynchronous ones call `done` once, after
// the outcome is durable, on a writer thread (or at once on the calling
// thread for a refusal): a callback must only hand its result on.
// Synchronous reads return committed state, never wait for a writer.
class Storage {
 public:
  virtual ~Storage() = default;

  // ---- Sessions ----

  // Claims one healthy available container of req.pool in req.region, then
  // in each fallback region in order, under the ClaimPolicy the storage was
  // opened with. kOk (a new session), kReplayed (the live session of the
  // tenant's idempotency key), kNoCapacity, kQuotaExceeded, kOverloaded or
  // kError. Messages are left to the caller for the first four.
  // REQUIRES: req.lease_ms > 0; fields validated.
  virtual void Claim(ClaimRequest req, SessionCallback done) = 0;
  // Ends the session if `token` is its current one and its lease runs: the
  // container becomes available (draining if it is drained, by an operator
  // or its own report; dead if it reported itself dead), and the session's
  // end is kept in the history (end reason released, released_by_admin or,
  // for caller.abandoning, abandoned). kOk (the session id only; also a
  // release again with the token of a session a release ended),
  // kStaleToken, kSessionEnded (the history's, or an expired lease),
  // kNotFound, kForbidden (another tenant's, unless the caller is admin),
  // kOverloaded or kError.
  virtual void Release(const Caller& caller, std::string session_id, int64_t token,
                       SessionCallback done) = 0;
  // Extends the lease to now + lease_ms if `token` is current: kOk with the
  // session, or as Release. A lease that would end sooner than it now ends
  // keeps its later end, unless `shorten`. REQUIRES: lease_ms > 0.
  virtual void Renew(const Caller& caller, std::string session_id, int64_t token,
                     int64_t lease_ms, bool shorten, SessionCallback done) = 0;
  void Renew(const Caller& caller, std::string session_id, int64_t token, int64_t lease_ms,
             SessionCallback done) {
    Renew(caller, std::move(session_id), token, lease_ms, /*shorten=*/false, std::move(done));
  }
  // The session as committed now: kOk, kSessionEnded (its lease is over, or
  // the history keeps it), kNotFound, kForbidden, kOverloaded or kError.
  virtual SessionResult GetSession(const Caller& caller, std::string_view session_id) = 0;
  // The tenant's sessions as committed now, as its quota counts them (every
  // partition). A read: never waits for a writer.
  virtual Status CountTenantSessions(const std::string& tenant, int64_t* sessions) = 0;
  // A page of the live sessions (lease not over) that `filter` matches, in
  // session id order, after `after` (empty: from the first): at most `limit`
  // into *page (cleared first). *next_after (cleared first) is where the
  // next page starts (its `after`), or empty when none can follow. A page
  // costs a page, not the fleet: a tenant's page reads only that tenant's
  // sessions (an index leads with the tenant), and each partition examines
  // at most ListExamineBound(limit) sessions, so when the other filters
  // reject many, the page may hold fewer than `limit` (even none) yet carry
  // a *next_after past the last session examined. With
  // filter.page_budget_bytes, a page also ends at the session that brings
  // its bytes (ListRowBytes, store/list_page.h) to it; no engine reads past
  // it. Keyset pages: a session living through a listing is on exactly one
  // page, whatever is claimed or released meanwhile. Every partition; a read.
  virtual Status ListSessions(const SessionFilter& filter, const std::string& after, int limit,
                              std::vector<Session>* page, std::string* next_after) = 0;
  // A page of the ended sessions the history keeps (GET, renew and release
  // answer session_ended for them) that `filter` matches, newest first: in
  // session id order from the last (ids begin with the time they were made,
  // store/session_id.h), before `after` (empty: from the newest). Pages as
  // ListSessions, each partition examining at most ListExamineBound(limit)
  // ended sessions; the tenant is one more filter there (no index leads
  // with it: every release writes the history), so a tenant's page costs the
  // bound, never the history. Every partition; a read.
  virtual Status ListEndedSessions(const SessionFilter& filter, const std::string& after,
                                   int limit, std::vector<EndedSession>* page,
                                   std::string* next_after) = 0;

  // Sets `registered` and `claimable` of each of *pools (region and pool
  // given), judged now: a few index lookups per pool, a read. Waiting claims
  // try the write path only for a pool that may serve them, and a claim for
  // a pool nobody registered never waits.
  virtual Status ProbePools(std::vector<PoolProbe>* pools) = 0;

  // ---- Containers ----

  // Registers new containers as available and updates known ones (data and
  // latency always; region and pool only when not picked; never the holder);
  // counts as a heartbeat and revives a dead container that is not picked.
  // A new id's tokens start above every token a deleted container of that id
  // ever had, so a fencing token never repeats. kOk with count = containers
  // written; kConflict (an id in another partition, or given twice there);
  // kOverloaded; kError. REQUIRES: every spec validated.
  virtual void Register(std::vector<ContainerSpec> specs, ContainerCallback done) = 0;
  // kOk with the container, kNotFound or kError.
  virtual ContainerResult GetContainer(std::string_view id) = 0;
  // A page of the containers `filter` matches, in id order, after `after`:
  // as ListSessions (at most ListExamineBound(limit) containers examined a
  // partition, so a page may be short or empty yet carry *next_after; and
  // ended at filter.page_budget_bytes).
  virtual Status ListContainers(const ContainerFilter& filter, const std::string& after,
                                int limit, std::vector<ContainerInfo>* page,
                                std::string* next_after) = 0;
  // An operator's drain (drain_requested), held until Undrain or Remove
  // whatever the container reports, through registration and death: an
  // available container becomes draining; a picked one when its session
  // ends; a dead one when it comes back. kOk with the container as it is
  // now, kNotFound, kOverloaded or kError.
  virtual void Drain(std::string id, ContainerCallback done) = 0;
  // Ends an operator's drain: a draining container becomes available, unless
  // it reported itself draining (drain_reported). As Drain.
  virtual void Undrain(std::string id, ContainerCallback done) = 0;
  // Removes a container not picked: kOk, kConflict, kNotFound, kOverloaded, kError.
  virtual void Remove(std::string id, ContainerCallback done) = 0;

  // ---- Heartbeats (batcher/) ----

  virtual int partitions() const = 0;
  // Sets *partition to the one holding the container, or -1 if none does.
  // A failed read is returned, never taken for an unknown id.
  virtual Status PartitionOf(const std::string& container_id, int* partition) = 0;
  // The partitions whose heartbeat queues carry the heartbeats of the
  // region's containers: every one (PostgreSQL spreads containers over its
  // writers by id), or one (SQLite: the region's shard). A region's
  // heartbeat lag counts its own heartbeats waiting there, and those whose
  // region is not known (Batcher::RegionLagMs).
  virtual std::vector<int> PartitionsOfRegion(const std::string& /*region*/) const {
    std::vector<int> all;
    for (int p = 0; p < partitions(); ++p) all.push_back(p);
    return all;
  }
  // Writes rows[0..n) of one partition as one atomic unit, in order, so that
  // they end as if written one after another: liveness always advances; a
  // report older than the stored one changes nothing else; a reported state
  // never moves a container into or out of picked. Blocks until durable.
  // Busy when the partition's queue is full (retry later); any error means
  // nothing of the batch was written (or, IsCommitOutcomeUnknown, all or
  // nothing after a restart). Never from a writer thread.
  virtual Status WriteHeartbeats(int partition, const std::vector<HeartbeatRow>& rows,
                                 HeartbeatWriteResult* result) = 0;

  // ---- Reaping: one bounded sweep a call, each in a transaction of its own ----

  // Ends at most max_rows sessions of the partition whose lease is over,
  // oldest first; sets *ended. A cheap read first, so an idle partition
  // costs its writer nothing. Never from a writer thread.
  virtual Status SweepExpiredLeases(int partition, int max_rows, int64_t* ended) = 0;
  // Marks dead at most max_rows containers of the partition that are silent
  // (stored heartbeat older than cutoff_ms()) or reported themselves dead,
  // held ones first, ending their sessions. cutoff_ms is asked again at
  // write time. Never from a writer thread.
  // The held containers of `held`'s pools are silent only past held.cutoff_ms.
  virtual Status SweepSilentContainers(int partition, const std::function<int64_t()>& cutoff_ms,
                                       const HeldPools& held, int max_rows,
                                       SilenceSweep* sweep) = 0;
  // Into *silent (cleared first): by region and pool, the containers of every
  // partition that are not dead and whose stored heartbeat is older than
  // cutoff_ms, for the reaper's test of a mass silence. A read: SQLite walks
  // the silent rows' index only; PostgreSQL scans the containers once.
  // Never from a writer thread.
  virtual Status CountSilent(int64_t cutoff_ms, std::vector<PoolSilence>* silent) = 0;
  // The oldest acceptance (HeartbeatRow::accepted_ms) among the partition's
  // rows a WriteHeartbeats answered ok for but kept to write later
  // (HeartbeatWriteResult::skipped), while not yet stored; 0 if none. The
  // reaper's watermark waits for them as for its own queue.
  virtual int64_t OldestHeldBackMs(int /*partition*/) { return 0; }
  // Tells the other nodes on the database, a partition each, the instant on
  // this node's clock before which every heartbeat it accepted is stored
  // (its "heard until"), so that their sweeps judge no silence past it by
  // more than their dead_after_ms. One node alone (SQLite): nothing to tell.
  virtual Status PublishHeardUntil(const std::vector<int64_t>& /*heard_until_ms*/,
                                   int64_t /*dead_after_ms*/) {
    return Status::Ok();
  }

  // Deletes at most max_rows of the session history the partition keeps
  // (GetSession's, Release's and Renew's kSessionEnded), oldest first: the
  // sessions that ended more than history_ms ago, then those past the
  // newest max_history_rows (the engine's whole history; SQLite's shards
  // each keep their share). Sets *pruned. A cheap read first, and an index
  // walk, never a scan; in a transaction of its own. Never from a writer
  // thread.
  virtual Status PruneSessionHistory(int partition, int64_t history_ms, int64_t max_history_rows,
                                     int max_rows, int64_t* pruned) = 0;

  // ---- Events (store/events.h) ----

  // Seqs in a cursor (EventCursor): 1, or one a shard for SQLite shards.
  virtual int event_streams() const { return 1; }
  // The events after `after` that `query` matches, in commit order, each
  // stream examining at most EventExamineBound(limit); an `after` past a
  // stream's pruned end sets page->expired and page->oldest, reading nothing.
  // Never waits for a writer. REQUIRES: after.seqs.size() == event_streams().
  virtual Status ReadEvents(const EventQuery& query, const EventCursor& after,
                            EventPage* page) = 0;
  // Deletes up to max_rows events older than retention_ms, oldest first,
  // raising the pruned end; sets *pruned. Own transaction, never a writer's.
  virtual Status PruneEvents(int partition, int64_t retention_ms, int max_rows,
                             int64_t* pruned) = 0;
  // Bumped at every commit of this storage's writers (and on PostgreSQL of
  // another node's that wrote events): what waiting readers wait on.
  virtual CommitSignal* commit_signal() = 0;

  // ---- Webhook delivery (server/webhooks/) ----

  // Takes or keeps, if free, lapsed or its own, `owner`'s lease on
  // delivering `tenant`'s webhook for lease_ms (the database's clock on
  // PostgreSQL); *held, and then *cursor (EventCursor text, "" at first).
  virtual Status LeaseWebhook(const std::string& tenant, const std::string& owner,
                              int64_t lease_ms, bool* held, std::string* cursor) = 0;
  // Moves `tenant`'s cursor to `cursor` and extends the lease, if `owner`
  // still holds it (*held); else changes nothing (another node took over).
  virtual Status AckWebhook(const std::string& tenant, const std::string& owner,
                            const std::string& cursor, int64_t lease_ms, bool* held) = 0;

  // ---- Capacity and observability ----

  // Stores `counts` (cumulative since the node started) as node_id's,
  // replacing what node_id published before for the same pools, stamped with
  // the engine's now; and deletes at most max_pruned rows of any node that
  // published nothing for longer than prune_after_ms. One transaction of its
  // own (a solo job: never in a claim's group), off the claim path. Never
  // from a writer thread. REQUIRES: counts.size() <= kMaxPublishedTallies.
  virtual Status PublishClaimCounts(const std::string& node_id,
                                    const std::vector<PoolClaimTally>& counts,
                                    int64_t prune_after_ms, int max_pruned) = 0;
  // Into *fleet (cleared first): the counts of every node that published
  // within the last window_ms, summed by region and pool, and how many nodes
  // those are. A read: never waits for a writer.
  virtual Status ReadFleetClaimCounts(int64_t window_ms, FleetClaimCounts* fleet) = 0;

  // Stores `mine` (every tenant this node's keys file names, and "" for
  // the rest) as node_id's, replacing what it published before, stamped
  // with the engine's now; deletes the rows of nodes that published nothing
  // for longer than window_ms; then reads into *fleet every node's rows
  // published within window_ms, this node's too. One transaction of its
  // own. Nodes share a database only on PostgreSQL: an engine of one node
  // (SQLite) stores nothing and answers its own rows alone.
  virtual Status PublishTenantLimits(const std::string& node_id,
                                     const std::vector<TenantLimitsDigest>& mine,
                                     int64_t window_ms, std::vector<TenantLimitsDigest>* fleet) {
    fleet->clear();
    for (TenantLimitsDigest d : mine) {
      d.node_id = node_id;
      fleet->push_back(std::move(d));
    }
    return Status::Ok();
  }

  // A reader of the partition's capacity counts; opens nothing until its
  // first Read. `busy_timeout_ms` bounds its wait for the engine's locks.
  virtual std::unique_ptr<CapacityReader> NewCapacityReader(int partition,
                                                            int busy_timeout_ms) = 0;
  virtual const WriterStats& writer_stats(int partition) const = 0;
  // PostgreSQL: the node's fence against an old primary back after a
  // failover (store/postgres/fence.h): the highest fence epoch it has seen,
  // and the connects it refused below it. SQLite has none (fenced false).
  struct FenceStats {
    bool fenced = false;
    int64_t epoch = 0;
    uint64_t refusals = 0;
  };
  virtual FenceStats fence_stats() const { return {}; }
  // Steps of the clock this engine's time decisions use (SQLite: this
  // node's; PostgreSQL: the database's), found against this node's
  // monotonic clock since it started (store/clock_steps.h), that this node
  // shifted the stored instants for; nullopt for an engine that does not
  // watch its clock.
  virtual std::optional<uint64_t> clock_steps() const { return std::nullopt; }
  // The policy claims are made under (StorageOptions::policy).
  virtual const ClaimPolicy& policy() const = 0;

  // Refuses new writes, commits everything accepted (every callback runs),
  // and stops the writers. Reads keep working. Idempotent.
  virtual void StopWriters() = 0;
};

// True while any partition's writer of `storage` cannot write
// (WriterStats::failing is 1): /readyz is 503 and heartbeats are refused.
inline bool AnyWriterFailing(const Storage& storage) {
  for (int p = 0; p < storage.partitions(); ++p) {
    if (storage.writer_stats(p).failing.load(std::memory_order_relaxed) != 0) return true;
  }
  return false;
}

// The engine's clock minus this node's wall clock, in ms, as its writers last
// measured it (WriterStats::clock_offset_ms): PostgreSQL's clock is the
// fleet's, and this node's now plus this is the database's now (to half a
// round trip). 0 where nothing was measured: SQLite's clock is this node's.
// The median of the writers that measured it, so one stale measure never
// decides.
inline int64_t EngineClockOffsetMs(const Storage& storage) {
  std::vector<int64_t> measured;
  for (int p = 0; p < storage.partitions(); ++p) {
    const WriterStats& stats = storage.writer_stats(p);
    if (stats.clock_offset_known.load(std::memory_order_relaxed) != 0) {
      measured.push_back(stats.clock_offset_ms.load(std::memory_order_relaxed));
    }
  }
  if (measured.empty()) return 0;
  std::nth_element(measured.begin(), measured.begin() + measured.size() / 2, measured.end());
  return measured[measured.size() / 2];
}

// Where and how to open storage (server's --db, --shards, --pg-writers,
// --sync flags).
struct StorageOptions {
  std::string db = "edgealloc.db";  // the SQLite file (or the base of its shard files)
  int shards = 1;
  // PostgreSQL only: writer connections of this node, each a partition of
  // the heartbeat path (a container's by a hash of its id), so that several
  // heartbeat batches commit at once; sessions are written by the first.
  int pg_writers = 4;
  Sync sync = Sync::kFull;
  std::string program = "edgealloc";  // who holds locks, in messages
  ClaimPolicy policy;
  // Where an engine tells what an operator should know of and no call
  // returns (PostgreSQL: this node's clock is far from the database's), from
  // any thread. Unset: nowhere.
  std::function<void(const std::string&)> warn;
};

// `db` as logs may show it: a PostgreSQL URI's or key=value password
// replaced by ***, a file path as it is; and which engine it names.
std::string DbForDisplay(std::string_view db);
const char* EngineName(std::string_view db);

// The versions of the engines' libraries this binary runs with (SQLite's,
// libpq's), for --version and the edgealloc_build_info metric.
std::string SqliteLibraryVersion();
std::string LibpqLibraryVersion();

// Opens (creating and migrating) the storage `options` names, its writers
// running. InvalidArgument for a store of another layout (a usage error);
// IOError, Busy or Corruption otherwise. *out is set only on success.
Status OpenStorage(const StorageOptions& options, std::unique_ptr<Storage>* out);

}  // namespace store

#endif  // EDGEALLOC_STORE_STORAGE_H_
