#ifndef EDGEALLOC_ALLOCATOR_WAITING_ROOM_H_
#define EDGEALLOC_ALLOCATOR_WAITING_ROOM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "allocator/allocator_types.h"
#include "allocator/claim_counts.h"
#include "allocator/pool_turns.h"
#include "allocator/region_backups.h"
#include "base/mutex.h"
#include "store/storage.h"

namespace allocator {

// The waiting room: claims that wait (wait_ms) for a container of their
// region and pool, bounded per pool, per tenant and in all
// (AllocatorOptions), and served by two threads: the prober reads the waiting
// pools and, for each pool that has a container to take, lets one waiter
// claim; the waiters' thread answers the waiters whose time is up and never
// waits on the storage, so a stalled read or claim holds no answer past
// wait_ms and kWaitAnswerGraceMs. A waiter queues under every pool it names
// (its region's and each fallback region's). The tenants waiting on a pool
// take turns (PoolTurns), and a tenant's own claims are served first come
// first served, whatever else they name. One that gives up is told when to
// retry from its pool's recent pace and its place (PoolTurns::RetryAfterS). A session
// claimed for a waiter whose client went away, or was answered without its
// claim's answer, is released here too (waiting_room_abandoned.cc).
// Allocator::Claim's comment tells what a client sees. Safe from any thread.
//
// The storage, options, stats and claim counts must outlive it. Callbacks it
// hands the storage are tracked (first attempts, waiters' claims, releases)
// and touch it only before Stop can see them back: Stop waits for them, so
// it may be destroyed once Stop returned.
class WaitingRoom {
 public:
  WaitingRoom(store::Storage* storage, const AllocatorOptions* options, AllocatorStats* stats,
              ClaimCounts* claims, const PoolDirectory* directory, RegionBackups* backups);
  WaitingRoom(const WaitingRoom&) = delete;
  WaitingRoom& operator=(const WaitingRoom&) = delete;

  // Starts the waiters' thread and the prober. Stop answers every waiter
  // no_capacity, ends the threads and waits (at most kStopReleaseMs) for the waiting claims
  // still with the storage and the releases of abandoned sessions: the
  // storage's writers must still run.
  void Start();
  void Stop();
  // Answers every waiter now (no_capacity) and lets none wait from now on.
  void EndWaits();

  // A claim with req.wait_ms > 0 and its lease set (Allocator::Claim).
  void Claim(store::ClaimRequest req, store::SessionCallback done,
             std::function<bool()> abandoned);
  // A claim that did not wait and found nothing, for a pool the directory
  // does not know: answered no_capacity once the prober found its pool
  // registered in a region it names, else unknown_pool. It never claims
  // here, and counts against the bounds meanwhile (a read each).
  void AnswerOnceProbed(store::ClaimRequest req, store::SessionCallback done);
  // Capacity may have come back (a release, an expiry): wakes the thread.
  void Wake();
  // What `tenant`'s waiting claims count now against its max_waiters.
  int64_t WaitingOf(const std::string& tenant) const;
  // The claims waiting now on `pool` (each of a waiter's pools counts it).
  int64_t WaitingOn(const PoolKey& pool) const;

 private:
  // A claim waiting for capacity.
  struct Waiter {
    store::ClaimRequest req;
    store::SessionCallback done;
    std::function<bool()> abandoned;
    int64_t started_ms = 0;
    int64_t deadline_ms = 0;
    bool in_flight = false;  // its claim is with the storage now
    bool probed = false;     // found registered (or probing failed): may wait
    bool probe_only = false;  // AnswerOnceProbed: answered once probed, never claims
    // Answered without its claim's answer (kWaitAnswerGraceMs past its time,
    // or stopping): whatever that claim brings is abandoned.
    bool answered = false;
    uint64_t arrival = 0;    // its place in arrivals_, set when it is queued
    int64_t retry_after_s = 0;  // set when it gives up (no_capacity): see RetryAfterLocked
    // The pools it may take a container of (its region's, then each
    // fallback region's), set when it is queued. It counts once for each
    // against its tenant's and the total bound: each is probed and tried.
    std::vector<PoolKey> pools;
    int64_t cost() const { return static_cast<int64_t>(pools.size()); }
  };
  using WaiterPtr = std::shared_ptr<Waiter>;

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

  // What one round of the waiters' thread found to do, out of the lock.
  struct Round {
    bool stop = false;
    std::vector<WaiterPtr> timed_out, gone, stopping;  // to answer no_capacity
    // Their claim is with the storage past their time and the grace (or at
    // a stop): to answer 503 unavailable, the outcome unknown, since that
    // claim may yet make a session (released, or kept for its key).
    std::vector<WaiterPtr> stalled, stopped_in_flight;
    std::vector<PendingRelease> releases;              // due now
    std::vector<store::PoolProbe> probes;              // pools to probe
  };

  // ---- The queues (waiting_room.cc) ----
  // Queues a claim that found nothing, or answers it (a full queue).
  void Enqueue(WaiterPtr w);
  // The storage's answer to a waiting claim's first attempt (a writer thread).
  void OnFirstClaimed(const WaiterPtr& w, store::SessionResult r);
  // The storage's answer to a waiter's claim (a writer thread).
  void OnWaiterClaimed(const WaiterPtr& w, store::SessionResult r);
  // Takes `w` out of every queue, if there. Counted back.
  void RemoveLocked(const WaiterPtr& w) REQUIRES(mu_);
  // Answers a waiter that leaves the queue without a session.
  void AnswerWaiter(const WaiterPtr& w, store::Outcome outcome, std::string message);
  // Answers a waiter whose client went away after a session was claimed for it.
  static void AnswerGone(const WaiterPtr& w);  // touches only w: may run after Stop
  // A claim's answer for a waiter already answered: a session it made is
  // abandoned (released, or kept for its key).
  void LateAnswerLocked(const Waiter& w, const store::SessionResult& r) REQUIRES(mu_);
  bool Abandoned(const Waiter& w) const { return w.abandoned && w.abandoned(); }
  // The claim's context for its message, held to its tenant's quota.
  ClaimContext QuotaContextOf(const store::ClaimRequest& req) const;
  // The pools a claim may take a container of: its region's and each
  // fallback region's.
  static std::vector<PoolKey> PoolsOf(const store::ClaimRequest& req);
  // A waiter leaves the queues (its counts go with it).
  void UncountLocked(const Waiter& w) REQUIRES(mu_);
  // Why `w` may not wait now (empty: it may): a full pool, tenant or total.
  std::string OverBoundLocked(const Waiter& w) REQUIRES(mu_);

  // ---- The waiters' thread (waiting_room_rounds.cc) ----
  // Never waits on the storage: its reads are the prober's, and its claims
  // and releases answer through callbacks.
  void Loop();
  // Sleeps until woken, wait_retry_ms passed or a failed release is due.
  void SleepLocked() REQUIRES(mu_);
  // Takes out the waiters to answer and the releases due; names the pools to probe.
  void SortOutLocked(Round* round) REQUIRES(mu_);
  // Marks answered the claims with the storage that may not wait for it any
  // more (past their time and the grace, or all when stopping), into *out.
  void TakeStalledLocked(int64_t now, bool stop, std::vector<WaiterPtr>* out) REQUIRES(mu_);
  // 503 unavailable for a waiter whose claim is still with the storage: the
  // outcome is unknown. `stopping`: the server stops, else it stalled.
  void AnswerInFlight(const WaiterPtr& w, bool stopping);
  void AnswerRound(Round* round);
  // Hands the pools to the prober, unless it is still reading: then a wake
  // has them read again as soon as it is back.
  void HandToProberLocked(std::vector<store::PoolProbe> probes, bool woken) REQUIRES(mu_);

  // ---- The prober (waiting_room_rounds.cc): reads, then lets waiters claim ----
  void ProbeLoop();
  // One read for every waiting pool, then each pool's first in line claims
  // if its pools may serve it; claims that no registered container could
  // serve are answered at once.
  void ProbeAndTry(std::vector<store::PoolProbe> probes);
  void PickLocked(const std::vector<store::PoolProbe>& probes, bool probed,
                  std::vector<WaiterPtr>* unregistered, std::vector<WaiterPtr>* to_try)
      REQUIRES(mu_);
  void AnswerUnregistered(const WaiterPtr& w);
  // Answers no_capacity a waiter whose claim the storage has not answered.
  // Answers at once the waiters probed and found in no registered pool.
  void TakeUnregisteredLocked(const std::vector<store::PoolProbe>& probes, bool probed,
                              std::vector<WaiterPtr>* unregistered) REQUIRES(mu_);
  // Who of a pool's queue claims next when it has a container: the first
  // in line of the tenant whose turn it is (PoolTurns).
  WaiterPtr NextInLineLocked(const PoolKey& pool, const std::deque<WaiterPtr>& queue) const
      REQUIRES(mu_);
  // How many waiters of `pool` would claim before `w` as tenants take turns:
  // its tenant's waiters before it, and of each other tenant as many as `w`
  // has (and one more).
  int64_t AheadOfLocked(const Waiter& w, const PoolKey& pool) const REQUIRES(mu_);
  // The Retry-After for `w` giving up now: the soonest any of its pools
  // would serve it at that pool's recent pace.
  int64_t RetryAfterLocked(const Waiter& w, int64_t now_ms) const REQUIRES(mu_);

  // ---- Sessions of clients that went away (waiting_room_abandoned.cc) ----
  // A session claimed for a waiter whose client went away, or that was
  // answered without it: queued to be released, or kept when the claim has
  // an idempotency key (counted as kept).
  void AbandonLocked(const Waiter& w, const store::Session& session) REQUIRES(mu_);
  // Takes from to_release_ the releases due at `now` into *due, drops (and
  // counts) those given up on, and lowers *next_ms to the next one's time.
  void TakeDueReleasesLocked(int64_t now, std::vector<PendingRelease>* due, int64_t* next_ms)
      REQUIRES(mu_);
  // Releases them (as admin); each failure comes back to to_release_.
  void SubmitReleases(std::vector<PendingRelease> releases);
  void OnAbandonedReleased(PendingRelease p, store::Outcome outcome);
  // Stop's end: waits for waiting claims still with the storage and releases
  // the abandoned sessions, until kStopReleaseMs passed.
  void DrainAtStop();

  store::Storage* const storage_;
  const AllocatorOptions* const options_;
  AllocatorStats* const stats_;
  ClaimCounts* const claims_;
  const PoolDirectory* const directory_;
  RegionBackups* const backups_;  // routes each attempt of a claim

  mutable base::Mutex mu_;
  base::CondVar wait_cv_;
  // Each pool's waiters in arrival order; a waiter is in the queue of every
  // pool it names. A queue with a waiter in flight claims no more until it
  // answers: one claim for a pool at a time.
  std::map<PoolKey, std::deque<WaiterPtr>> waiters_ GUARDED_BY(mu_);
  std::map<uint64_t, WaiterPtr> arrivals_ GUARDED_BY(mu_);  // every waiter, once
  PoolTurns turns_ GUARDED_BY(mu_);  // the tenants' turns and each pool's pace
  uint64_t next_arrival_ GUARDED_BY(mu_) = 1;
  std::vector<PendingRelease> to_release_ GUARDED_BY(mu_);  // abandoned waiters' sessions
  int releases_in_flight_ GUARDED_BY(mu_) = 0;      // of those, with the storage now
  int first_claims_in_flight_ GUARDED_BY(mu_) = 0;  // waiting claims' first attempts
  // Of those, the ones not back yet: the waiters' thread answers them if the
  // storage holds them past their time and the grace.
  std::set<WaiterPtr> first_attempts_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;  // Stop is over: nothing releases any more
  bool started_ GUARDED_BY(mu_) = false;  // its threads run (Start, until Stop)
  base::CondVar drain_cv_;  // one of the four above changed (Stop waits on it)
  bool wake_ GUARDED_BY(mu_) = false;
  bool wait_stop_ GUARDED_BY(mu_) = false;
  std::atomic<bool> any_waiters_{false};
  std::map<std::string, int64_t> tenant_waiting_ GUARDED_BY(mu_);  // costs, by tenant
  int64_t total_waiting_ GUARDED_BY(mu_) = 0;                       // costs, all tenants
  // The prober's pools to read (set while probing_), and whether a wake came
  // while it read.
  base::CondVar probe_cv_;
  std::vector<store::PoolProbe> to_probe_ GUARDED_BY(mu_);
  bool probing_ GUARDED_BY(mu_) = false;
  bool reprobe_ GUARDED_BY(mu_) = false;
  std::thread thread_;
  std::thread prober_;
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_WAITING_ROOM_H_
