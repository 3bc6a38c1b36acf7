#ifndef EDGEALLOC_ALLOCATOR_ALLOCATOR_TYPES_H_
#define EDGEALLOC_ALLOCATOR_ALLOCATOR_TYPES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "store/types.h"

namespace allocator {

// The Allocator's options, counters and pool keys, apart from it so that its
// parts (the claim counts, the waiting room, the lease reaper) take them
// without knowing the Allocator. allocator.h includes this: its users see
// them there.

struct AllocatorOptions {
  int64_t default_lease_ms = store::kDefaultLeaseMs;  // a claim or renewal that names no lease
  int64_t max_lease_ms = store::kDefaultMaxLeaseMs;  // the longest lease a client may ask for
  int reaper_interval_ms = 100;      // how often expired leases are swept
  int reaper_batch_rows = 256;       // sessions one sweep transaction ends at most
  int max_sweeps_per_reap = 8;       // sweeps of one partition a reap runs at most
  // How long the end of a session is kept (GET, renew and release answer
  // session_ended), at most how many ended sessions are kept, how often the
  // older ones are pruned, how many one prune transaction deletes, and how
  // many a second at most (each partition: a SQLite shard, or PostgreSQL's
  // one history). Every claim ends in one row, so the rate must be above
  // the sustained claim rate, or the history outgrows its bound; the period
  // is short, so that the rows made between two prunes stay few.
  int64_t session_history_ms = 86400000;
  int64_t session_history_max_rows = 1000000;
  int history_prune_interval_ms = 100;
  int history_prune_rows = 1000;
  int64_t history_prune_rows_per_s = 100000;
  // How long the event log keeps an event (store/events.h), pruned with
  // the history, at the same pace and in the same bounded transactions.
  int64_t event_retention_ms = 3600000;
  // Claims that may wait (wait_ms) for one pool at once; past it a waiting
  // claim is refused as kOverloaded.
  int max_waiters_per_pool = 1000;
  // Claims one tenant may have waiting at once, over every pool (a tenant's
  // own max_waiters, TenantLimits, wins), and all tenants together; past
  // either a waiting claim is refused as kOverloaded. A claim with fallback
  // regions counts once per region it names.
  int64_t max_waiters_per_tenant = 1000;
  int64_t max_waiters_total = 10000;
  // How often the waiting pools are probed (one read, Storage::ProbePools)
  // when nothing woke them: what frees a container without passing through
  // this Allocator (a heartbeat, a registration, an undrain, another node's
  // release) is found this late. A pool's first waiter claims (the write
  // path) only when the probe finds a container it could take.
  int wait_retry_ms = 100;
  // This node's name among the nodes on its database, and how often it
  // publishes its claim counts and reads the fleet's (FleetClaims); 0 or an
  // empty id: never.
  std::string node_id;
  int64_t claims_publish_ms = 0;
  // Each region's designated backup (region -> backup; no cycle: BackupCycle),
  // and the heartbeat lag past which a region's claims go to it
  // (RegionBackups).
  std::map<std::string, std::string> backup_regions;
  int64_t max_heartbeat_lag_ms = 2000;
};

// The fleet's claim counts sum the nodes that published within this long
// (FleetClaims): a stopped node's counts leave the sums after it. Rows of
// nodes silent for longer are deleted, at most kMaxPrunedClaimRows a publish.
inline constexpr int64_t kFleetClaimWindowMs = 30000;
inline constexpr int kMaxPrunedClaimRows = 10000;

// The longest a claim may wait for a container (API 1.1: 0 to 30000 ms).
inline constexpr int64_t kMaxClaimWaitMs = 30000;

// How long past its wait_ms a waiting claim whose claim is with the storage
// (its first attempt, or one a probe let it make) waits for that claim's
// answer: past it the client is answered no_capacity without it, so that a
// stalled database (stopped, a link that forwards nothing, a row lock) never
// holds a waiting claim longer. A session the claim still makes is released
// as a gone client's is (kept for an idempotency key's retry). Long enough
// for a claim of a working database to answer, even a busy one's.
inline constexpr int64_t kWaitAnswerGraceMs = 1000;

// How long Stop waits at most for the waiting claims still with the storage
// and for the releases of sessions claimed for clients that went away.
inline constexpr int64_t kStopReleaseMs = 2000;

// Claims of one pool (the dashboard's per-pool rates): ok where a session was
// made (a fallback region's pool when it served), no_capacity where asked.
struct PoolClaimCounts {
  uint64_t ok = 0;
  uint64_t no_capacity = 0;
};
using PoolKey = std::pair<std::string, std::string>;  // region, pool

// The pools as the capacity mirror saw them lately (Allocator::
// SetPoolDirectory): whether a region's pool exists, and a region's pools,
// sorted. Either may be empty (no mirror: every pool may exist).
struct PoolDirectory {
  std::function<bool(const std::string& region, const std::string& pool)> exists;
  std::function<std::vector<std::string>(const std::string& region)> pools_of;
};

// Pools counted one by one at most; a claim for any other pool is counted in
// the totals only, so that clients naming made-up regions cannot grow
// /metrics without bound. Well above the 300 pools of a large fleet.
inline constexpr size_t kMaxCountedPools = 4096;

// Counters, read from any thread (metrics, benches).
struct AllocatorStats {
  std::atomic<uint64_t> claims_ok{0}, claims_replayed{0}, claims_no_capacity{0},
      claims_quota{0}, claims_no_match{0}, claims_error{0}, releases{0}, renewals{0},
      stale_tokens{0}, lease_expiries{0};
  // Sessions this node ended, by end reason (store/types.h kEndReasons), as
  // far as it knows them: its API releases (released and released_by_admin
  // together, as released; a repeated release not again), its lease
  // expiries (lease_expiries) and the sessions it released for waiting
  // clients that went away (abandoned). The dead reaper's are the batcher's.
  std::atomic<uint64_t> sessions_released{0}, sessions_abandoned{0};
  // Ended sessions pruned from the history, and prunes that failed.
  std::atomic<uint64_t> history_pruned{0}, history_prunes_failed{0};
  // Claims that waited (wait_ms): served after waiting, out of time, refused
  // for a full queue, and given up by their client (a session claimed for
  // one of those is released at once, unless kept for an idempotency key).
  std::atomic<uint64_t> waits_served{0}, waits_timed_out{0}, waits_refused{0},
      waits_abandoned{0};
  // Waiting claims answered no_capacity while their claim was still with the
  // storage, kWaitAnswerGraceMs past their wait_ms (the database stalled).
  std::atomic<uint64_t> waits_stalled{0};
  // Waiting claims answered at once: no container of their pool is
  // registered in their region or any fallback region.
  std::atomic<uint64_t> waits_unregistered{0};
  // Claims answered unknown_pool: no container of their pool is registered
  // in any region they name. Counted here, never one series per name.
  std::atomic<uint64_t> claims_unknown_pool{0};
  // Probes of the waiting pools (one read each) and those that failed.
  std::atomic<uint64_t> wait_probes{0}, wait_probes_failed{0};
  // Claims a waiter made after a probe (its first attempt aside) that got
  // no session: each was a writer job for nothing.
  std::atomic<uint64_t> wait_claims_failed{0};
  // Of the sessions claimed for a client that went away (in waits_abandoned):
  // kept, because the claim carries an idempotency key whose retry replays
  // the session (it ends by its lease or its client's release); and those
  // that could not be released (the storage failing until their lease ended,
  // or Stop's deadline passing first), which end by expiry instead.
  std::atomic<uint64_t> abandoned_sessions_kept{0}, abandoned_releases_failed{0};
  std::atomic<int64_t> waiting{0};  // claims waiting now
  // Claims that made or replayed a session, by the region that served it:
  // the claim's own, a fallback region, or its region's backup
  // (edgealloc_claims_served_total{served_by}).
  std::atomic<uint64_t> served_home{0}, served_fallback{0}, served_backup{0};
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_ALLOCATOR_TYPES_H_
