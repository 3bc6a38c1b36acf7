#ifndef EDGEALLOC_ALLOCATOR_ALLOCATOR_H_
#define EDGEALLOC_ALLOCATOR_ALLOCATOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>
#include <string>
#include <utility>
#include <string_view>
#include <thread>

#include "base/mutex.h"
#include "store/storage.h"
#include "store/types.h"

namespace allocator {

struct AllocatorOptions {
  int64_t default_lease_ms = store::kDefaultLeaseMs;  // a claim or renewal that names no lease
  int64_t max_lease_ms = store::kDefaultMaxLeaseMs;  // the longest lease a client may ask for
  int reaper_interval_ms = 100;      // how often expired leases are swept
  int reaper_batch_rows = 256;       // sessions one sweep transaction ends at most
  int max_sweeps_per_reap = 8;       // sweeps of one partition a reap runs at most
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
};

// The longest a claim may wait for a container (API 1.1: 0 to 30000 ms).
inline constexpr int64_t kMaxClaimWaitMs = 30000;

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

// Pools counted one by one at most; a claim for any other pool is counted in
// the totals only, so that clients naming made-up regions cannot grow
// /metrics without bound. Well above the 300 pools of a large fleet.
inline constexpr size_t kMaxCountedPools = 4096;

// Counters, read from any thread (metrics, benches).
struct AllocatorStats {
  std::atomic<uint64_t> claims_ok{0}, claims_replayed{0}, claims_no_capacity{0},
      claims_quota{0}, claims_error{0}, releases{0}, renewals{0}, stale_tokens{0},
      lease_expiries{0};
  // Claims that waited (wait_ms): served after waiting, out of time, refused
  // for a full queue, and given up by their client (a session claimed for
  // one of those is released at once, unless kept for an idempotency key).
  std::atomic<uint64_t> waits_served{0}, waits_timed_out{0}, waits_refused{0},
      waits_abandoned{0};
  // Waiting claims answered at once: no container of their pool is
  // registered in their region or any fallback region.
  std::atomic<uint64_t> waits_unregistered{0};
  // Refused claims (no_capacity, not waiting) naming a pool that does not
  // exist (SetPoolDirectory): counted here, never one series per name.
  std::atomic<uint64_t> claims_unknown_pool{0};
  // Probes of the waiting pools (one read each) and those that failed.
  std::atomic<uint64_t> wait_probes{0}, wait_probes_failed{0};
  // Of the sessions claimed for a client that went away (in waits_abandoned):
  // kept, because the claim carries an idempotency key whose retry replays
  // the session (it ends by its lease or its client's release); and those
  // that could not be released (the storage failing until their lease ended,
  // or Stop's deadline passing first), which end by expiry instead.
  std::atomic<uint64_t> abandoned_sessions_kept{0}, abandoned_releases_failed{0};
  std::atomic<int64_t> waiting{0};  // claims waiting now
};

// The Allocator is the session side of the service (docs/design.md): claim,
// release, renew and exact session reads, over the storage seam, with the
// lease policy (defaults and bounds), the counters and the messages a client
// reads; and the lease reaper thread, which ends sessions whose lease is over.
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

  // Starts and stops the lease reaper thread and the thread that serves
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
  // max_waiters_per_pool wait.
  void Claim(store::ClaimRequest req, store::SessionCallback done,
             std::function<bool()> abandoned = {});
  // Storage::Release and Storage::Renew (lease_ms 0: the default), counted.
  void Release(const store::Caller& caller, std::string session_id, int64_t token,
               store::SessionCallback done);
  void Renew(const store::Caller& caller, std::string session_id, int64_t token,
             int64_t lease_ms, store::SessionCallback done);
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
  // A page of live sessions (Storage::ListSessions), on the calling thread.
  store::Status ListSessions(const store::SessionFilter& filter, const std::string& after,
                             int limit, std::vector<store::Session>* page,
                             std::string* next_after);

  // Ends the sessions of every partition whose lease is over, in bounded
  // sweeps; returns how many. The reaper thread calls this; tests may too.
  int64_t ReapExpiredLeases();

  const AllocatorStats& stats() const { return stats_; }
  // The per-pool claim counts so far (at most kMaxCountedPools pools).
  std::map<PoolKey, PoolClaimCounts> PoolClaims() const;
  const AllocatorOptions& options() const { return options_; }
  // Whether a region's pool exists (the capacity mirror's view), so that
  // per-pool counts keep only real pools however many names clients make
  // up; without one every pool is counted (up to kMaxCountedPools). Set it
  // before Start.
  void SetPoolDirectory(std::function<bool(const std::string& region, const std::string& pool)>
                            exists) {
    pool_exists_ = std::move(exists);
  }

 private:
  // Of a claim, what its reply's message names.
  struct ClaimContext {
    std::string tenant, region, pool;
    bool has_fallbacks = false;
    int64_t max_sessions = store::kUnlimited;  // the quota its tenant is held to
  };
  // Counts a finished claim and words its message.
  void FinishClaim(const ClaimContext& req, store::SessionResult* r);
  // `done`, after counting its result: in *ok if kOk, as a stale token if that.
  store::SessionCallback Counted(std::atomic<uint64_t>* ok, store::SessionCallback done);
  void CountPoolClaim(const std::string& region, const std::string& pool, bool ok);
  void ReaperLoop();

  // A claim waiting for capacity.
  struct Waiter {
    store::ClaimRequest req;
    store::SessionCallback done;
    std::function<bool()> abandoned;
    int64_t started_ms = 0;
    int64_t deadline_ms = 0;
    bool in_flight = false;  // its claim is with the storage now
    bool probed = false;     // found registered (or probing failed): may wait
    // The pools it may take a container of (its region's, then each
    // fallback region's), set when it is queued. It counts once for each
    // against its tenant's and the total bound: each is probed and tried.
    std::vector<PoolKey> pools;
    int64_t cost() const { return static_cast<int64_t>(pools.size()); }
  };
  using WaiterPtr = std::shared_ptr<Waiter>;
  // Queues a claim that found nothing, or answers it (a full queue).
  void Enqueue(WaiterPtr w);
  // The storage's answer to a waiter's claim (a writer thread).
  void OnWaiterClaimed(const WaiterPtr& w, store::SessionResult r);
  // Answers a waiter that leaves the queue without a session.
  void AnswerWaiter(const WaiterPtr& w, store::Outcome outcome, std::string message);
  // The storage's answer to a waiting claim's first attempt (a writer thread).
  void OnFirstClaimed(const WaiterPtr& w, store::SessionResult r);
  // A session claimed for a waiter whose client went away: queued to be
  // released, or kept when the claim has an idempotency key. Counted.
  void AbandonLocked(const Waiter& w, const store::Session& session) REQUIRES(wait_mu_);
  // Answers a waiter whose client went away after a session was claimed for it.
  static void AnswerGone(const WaiterPtr& w);  // touches only w: may run after Stop

  // A session claimed for a client that went away, to be released.
  struct PendingRelease {
    store::Session session;
    int attempts = 0;         // releases of it that failed so far
    int64_t next_try_ms = 0;  // not before (a failed release backs off)
    // When its lease will have ended, on this node's clock: the session's
    // lease_expires_at_ms is the store's (the database's on PostgreSQL,
    // which this node's wall clock may be far from), so the lease's length
    // is counted from here instead.
    int64_t give_up_ms = 0;
  };
  // Takes from to_release_ the releases due at `now` into *due, drops (and
  // counts) those given up on, and lowers *next_ms to the next one's time.
  void TakeDueReleasesLocked(int64_t now, std::vector<PendingRelease>* due, int64_t* next_ms)
      REQUIRES(wait_mu_);
  // Releases them (as admin); each failure comes back to to_release_.
  void SubmitReleases(std::vector<PendingRelease> releases);
  void OnAbandonedReleased(PendingRelease p, store::Outcome outcome);
  // Stop's end: waits for waiting claims still with the storage and releases
  // the abandoned sessions, until kStopReleaseMs passed.
  void DrainAtStop();
  bool Abandoned(const Waiter& w) const { return w.abandoned && w.abandoned(); }
  // Wakes the waiters' thread: capacity may have come back.
  void WakeWaiters();
  void WaiterLoop();
  // The pools a claim may take a container of: its region's and each
  // fallback region's.
  static std::vector<PoolKey> PoolsOf(const store::ClaimRequest& req);
  // A waiter leaves the queues (its counts go with it).
  void UncountLocked(const Waiter& w) REQUIRES(wait_mu_);
  // Why `w` may not wait now (empty: it may): a full pool, tenant or total.
  std::string OverBoundLocked(const Waiter& w) REQUIRES(wait_mu_);

  store::Storage* const storage_;
  const AllocatorOptions options_;
  AllocatorStats stats_;
  mutable base::Mutex pool_claims_mu_;
  std::map<PoolKey, PoolClaimCounts> pool_claims_ GUARDED_BY(pool_claims_mu_);

  mutable base::Mutex wait_mu_;
  base::CondVar wait_cv_;
  std::map<PoolKey, std::deque<WaiterPtr>> waiters_ GUARDED_BY(wait_mu_);
  std::vector<PendingRelease> to_release_ GUARDED_BY(wait_mu_);  // abandoned waiters' sessions
  int releases_in_flight_ GUARDED_BY(wait_mu_) = 0;      // of those, with the storage now
  int first_claims_in_flight_ GUARDED_BY(wait_mu_) = 0;  // waiting claims' first attempts
  bool stopped_ GUARDED_BY(wait_mu_) = false;  // Stop is over: nothing releases any more
  base::CondVar drain_cv_;  // one of the four above changed (Stop waits on it)
  bool wake_ GUARDED_BY(wait_mu_) = false;
  bool wait_stop_ GUARDED_BY(wait_mu_) = false;
  std::atomic<bool> any_waiters_{false};
  std::map<std::string, int64_t> tenant_waiting_ GUARDED_BY(wait_mu_);  // costs, by tenant
  int64_t total_waiting_ GUARDED_BY(wait_mu_) = 0;                       // costs, all tenants
  std::function<bool(const std::string&, const std::string&)> pool_exists_;
  std::thread waiter_thread_;

  base::Mutex reaper_mu_;
  base::CondVar reaper_cv_;
  bool reaper_stop_ GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_ALLOCATOR_H_
