#ifndef EDGEALLOC_ALLOCATOR_ALLOCATOR_H_
#define EDGEALLOC_ALLOCATOR_ALLOCATOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "allocator/allocator_types.h"
#include "allocator/claim_counts.h"
#include "allocator/fleet_claims.h"
#include "allocator/lease_reaper.h"
#include "allocator/region_backups.h"
#include "allocator/waiting_room.h"
#include "store/storage.h"
#include "store/types.h"

namespace allocator {

// The Allocator is the session side of the service (docs/design.md): claim,
// release, renew and exact session reads, over the storage seam, with the
// lease policy (defaults and bounds), the counters and the messages a client
// reads; and the lease reaper thread, which ends sessions whose lease is over.
// Its parts live apart: the claims (allocator_claims.cc, counted by
// claim_counts.h and worded by claim_messages.h), the waiting room
// (waiting_room.h) and the lease reaper (lease_reaper.h).
// The lifecycle itself (one atomic claim statement, compare-and-swap on the
// fencing token) is the storage engine's. Safe from any thread; results come
// back through callbacks on writer threads, after the commit. The storage
// must outlive it; Stop() it before the storage's writers stop, and destroy
// it after they stopped: Stop waits for the waiting claims and abandoned
// releases it tracks, not for a plain claim, renew or release whose callback
// (which counts it here) is still to run.
class Allocator {
 public:
  Allocator(store::Storage* storage, AllocatorOptions options);
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator();

  // Starts and stops the lease reaper thread, the fleet claim counts' thread
  // (FleetClaims, when options.claims_publish_ms is set) and the thread that serves
  // waiting claims (Stop answers every waiter no_capacity). Stop also waits
  // (at most kStopReleaseMs) for the waiting claims still with the storage
  // and releases the sessions claimed for clients that went away: the
  // storage's writers must still run.
  void Start();
  void Stop();
  // Answers every waiting claim now (no_capacity, a 503) and lets no claim
  // wait from now on, without stopping anything else: at SIGTERM, so that
  // waiting claims do not hold the shutdown for its whole grace period.
  void EndWaits();

  // Claims one container for `req` (Storage::Claim), with the default lease
  // when req.lease_ms is 0. kOk, kReplayed, kNoCapacity, kQuotaExceeded,
  // kOverloaded or kError, each with a message for people when not kOk.
  // REQUIRES: req.lease_ms in [0, max_lease_ms]; fields validated.
  //
  // The regions tried: req.region, req.fallback_regions, then the region's
  // designated backup (options.backup_regions); a region whose heartbeat
  // lag is past max_heartbeat_lag_ms is replaced by its backup and never
  // tried itself (RegionBackups::Routed), at each attempt. A session's
  // result says which served it (SessionResult::served_by).
  //
  // With req.wait_ms > 0, a claim that finds nothing waits up to that long,
  // first come first served among the claims waiting for its region and
  // pool: the first of them claims again when a release through this
  // Allocator (or an expiry) may have freed one, and every wait_retry_ms
  // anyway. `abandoned`, when set, tells whether the client went away: a
  // waiter it says so of is answered at once and claims nothing. A session
  // claimed for it meanwhile (its first attempt's or a later one's) is
  // released, retried while the storage fails, unless the claim carries an
  // idempotency key: a retry of the key, perhaps already answered through
  // another connection or node, replays that session, so it is kept (and
  // ends by its lease or its client's release). At most
  // max_waiters_per_pool wait. Whatever the storage does, a waiting claim
  // is answered within wait_ms, kWaitAnswerGraceMs and a retry tick: a claim
  // made for it that the storage holds past that is not waited for (its
  // session, if it makes one, is released or kept as a gone client's).
  void Claim(store::ClaimRequest req, store::SessionCallback done,
             std::function<bool()> abandoned = {});
  // Storage::Release and Storage::Renew (lease_ms 0: the default), counted.
  void Release(const store::Caller& caller, std::string session_id, int64_t token,
               store::SessionCallback done);
  // A renew never shortens the lease unless `shorten` (Storage::Renew).
  void Renew(const store::Caller& caller, std::string session_id, int64_t token,
             int64_t lease_ms, store::SessionCallback done, bool shorten = false);
  // The session as committed now (Storage::GetSession), on the calling thread.
  store::SessionResult GetSession(const store::Caller& caller, std::string_view session_id);

  // A tenant's quota (the storage's ClaimPolicy; store::kUnlimited for none)
  // and its sessions as committed now, on the calling thread.
  struct TenantLimits {
    int64_t max_sessions = store::kUnlimited;
    int64_t sessions = 0;
  };
  store::Status Limits(const std::string& tenant, TenantLimits* out);
  // What `tenant`'s waiting claims count now against its max_waiters.
  int64_t WaitingOf(const std::string& tenant) const;
  // The claims waiting now for a container of `region`'s `pool`.
  int64_t WaitingOn(const std::string& region, const std::string& pool) const {
    return waiting_room_.WaitingOn({region, pool});
  }
  // A page of live sessions (Storage::ListSessions), on the calling thread.
  store::Status ListSessions(const store::SessionFilter& filter, const std::string& after,
                             int limit, std::vector<store::Session>* page,
                             std::string* next_after);
  // A page of ended sessions (Storage::ListEndedSessions), on the calling
  // thread.
  store::Status ListEndedSessions(const store::SessionFilter& filter, const std::string& after,
                                  int limit, std::vector<store::EndedSession>* page,
                                  std::string* next_after);

  // Ends the sessions of every partition whose lease is over, in bounded
  // sweeps; returns how many. The reaper thread calls this; tests may too.
  int64_t ReapExpiredLeases();

  const AllocatorStats& stats() const { return stats_; }
  // The per-pool claim counts so far (at most kMaxCountedPools pools).
  std::map<PoolKey, PoolClaimCounts> PoolClaims() const;
  // The fleet's claim counts (FleetClaims): the latest read and an earlier
  // one, from any thread, and a publish and read now (tests).
  std::shared_ptr<const FleetClaimsSnapshot> FleetClaimCounts() const {
    return fleet_claims_.Current();
  }
  std::shared_ptr<const FleetClaimsSnapshot> EarlierFleetClaimCounts() const {
    return fleet_claims_.Earlier();
  }
  store::Status RefreshFleetClaims() { return fleet_claims_.Refresh(); }
  const AllocatorOptions& options() const { return options_; }
  // The pools the capacity mirror saw lately, so that per-pool counts keep
  // only real pools however many names clients make up (without one every
  // pool is counted, up to kMaxCountedPools); a claim refused no_capacity
  // whose pools it does not know is checked in the store before it is
  // answered (unknown_pool, naming the region's pools), and one it knows is
  // answered at once. Set it before Start.
  void SetPoolDirectory(PoolDirectory directory) {
    claims_.SetPoolDirectory(directory.exists);
    directory_ = std::move(directory);
  }

  // The designated backups and which regions are on theirs (RegionBackups).
  // Set the lag (RegionBackups::SetLag) before Start.
  RegionBackups& backups() { return backups_; }
  const RegionBackups& backups() const { return backups_; }

 private:
  // `done`, after the session's served_by is set and counted.
  store::SessionCallback CountServedBy(const std::string& home, store::SessionCallback done);
  // Whether the directory saw the claim's pool in a region it names.
  bool KnownToDirectory(const store::ClaimRequest& req) const;
  // `done`, after counting its result: in *ok if kOk, as a stale token if that.
  store::SessionCallback Counted(std::atomic<uint64_t>* ok, store::SessionCallback done);

  store::Storage* const storage_;
  const AllocatorOptions options_;
  AllocatorStats stats_;
  // The parts, each told what it shares (declared after what they point to,
  // so built after it): their threads end in Stop, before any of it goes.
  ClaimCounts claims_{&stats_};
  PoolDirectory directory_;
  RegionBackups backups_{options_.backup_regions, options_.max_heartbeat_lag_ms};
  WaitingRoom waiting_room_{storage_, &options_, &stats_, &claims_, &directory_, &backups_};
  LeaseReaper reaper_{storage_, &options_, &stats_, [this] { waiting_room_.Wake(); }};
  FleetClaims fleet_claims_{storage_, &options_, &stats_, &claims_};
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_ALLOCATOR_H_
