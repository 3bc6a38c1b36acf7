#include "allocator/allocator.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "base/clock.h"
#include "store/session_rules.h"

namespace allocator {

using store::Outcome;

namespace {

// How long after its n-th failure (n >= 1) the release of an abandoned
// session is tried again: 100 ms, doubling, at most 2 s; while stopping,
// 50 ms (Stop waits kStopReleaseMs at most).
int64_t ReleaseRetryDelayMs(int failures, bool stopping) {
  if (stopping) return 50;
  return std::min<int64_t>(int64_t{50} << std::min(failures, 6), 2000);
}

}  // namespace

Allocator::Allocator(store::Storage* storage, AllocatorOptions options)
    : storage_(storage), options_(options) {}

Allocator::~Allocator() { Stop(); }

void Allocator::Start() {
  {
    base::MutexLock lock(&reaper_mu_);
    reaper_stop_ = false;
    if (!reaper_.joinable()) reaper_ = std::thread([this] { ReaperLoop(); });
  }
  base::MutexLock lock(&wait_mu_);
  wait_stop_ = false;
  stopped_ = false;
  if (!waiter_thread_.joinable()) waiter_thread_ = std::thread([this] { WaiterLoop(); });
}

void Allocator::Stop() {
  {
    base::MutexLock lock(&reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.SignalAll();
  if (reaper_.joinable()) reaper_.join();
  {
    base::MutexLock lock(&wait_mu_);
    wait_stop_ = true;
  }
  wait_cv_.SignalAll();
  if (waiter_thread_.joinable()) waiter_thread_.join();
  // Never started, or queued since it stopped: answered here, so that every
  // claim is answered exactly once.
  std::vector<WaiterPtr> left;
  {
    base::MutexLock lock(&wait_mu_);
    for (auto& [key, queue] : waiters_) {
      for (auto& w : queue) {
        if (!w->in_flight) {
          left.push_back(w);
          UncountLocked(*w);
        }
      }
      std::erase_if(queue, [](const WaiterPtr& w) { return !w->in_flight; });
    }
    std::erase_if(waiters_, [](const auto& entry) { return entry.second.empty(); });
  }
  for (const auto& w : left) AnswerWaiter(w, Outcome::kNoCapacity, "");
  DrainAtStop();
}

void Allocator::DrainAtStop() {
  const int64_t deadline = base::NowMs() + kStopReleaseMs;
  {
    // Whatever backs off is tried now: there is no later.
    base::MutexLock lock(&wait_mu_);
    for (auto& p : to_release_) p.next_try_ms = 0;
  }
  for (;;) {
    std::vector<PendingRelease> due;
    {
      base::MutexLock lock(&wait_mu_);
      for (;;) {
        const int64_t now = base::NowMs();
        int64_t next_ms = deadline;
        TakeDueReleasesLocked(now, &due, &next_ms);
        if (!due.empty()) break;
        // Waiting claims still with the storage (their answer may bring a
        // session to release), releases in flight or backing off.
        const bool pending = !to_release_.empty() || releases_in_flight_ > 0 ||
                             first_claims_in_flight_ > 0 || !waiters_.empty();
        if (!pending || now >= deadline) {
          // What is left ends by its lease.
          stats_.abandoned_releases_failed.fetch_add(to_release_.size(),
                                                     std::memory_order_relaxed);
          to_release_.clear();
          stopped_ = true;
          return;
        }
        drain_cv_.WaitFor(&wait_mu_, std::chrono::milliseconds(std::max<int64_t>(
                                         1, std::min(next_ms, deadline) - now)));
      }
    }
    SubmitReleases(std::move(due));
  }
}

void Allocator::Claim(store::ClaimRequest req, store::SessionCallback done,
                      std::function<bool()> abandoned) {
  assert(req.lease_ms >= 0 && req.lease_ms <= options_.max_lease_ms);
  assert(req.wait_ms >= 0 && req.wait_ms <= kMaxClaimWaitMs);
  if (req.lease_ms == 0) req.lease_ms = options_.default_lease_ms;
  if (req.wait_ms > 0) {
    auto w = std::make_shared<Waiter>();
    w->started_ms = base::NowMs();
    w->deadline_ms = w->started_ms + req.wait_ms;
    w->req = req;
    w->done = std::move(done);
    w->abandoned = std::move(abandoned);
    bool others_wait = false;
    {
      base::MutexLock lock(&wait_mu_);
      auto it = waiters_.find(PoolKey(req.region, req.pool));
      others_wait = it != waiters_.end() && !it->second.empty();
      if (!others_wait) ++first_claims_in_flight_;
    }
    // First come, first served: behind the claims already waiting.
    if (others_wait) return Enqueue(std::move(w));
    storage_->Claim(std::move(req),
                    [this, w](store::SessionResult r) { OnFirstClaimed(w, std::move(r)); });
    return;
  }
  // What the message needs, kept apart from the request the storage takes.
  ClaimContext context{req.caller.tenant, req.region, req.pool, !req.fallback_regions.empty(),
                       store::TenantQuota(storage_->policy(), req.caller)};
  storage_->Claim(std::move(req), [this, context = std::move(context),
                                   done = std::move(done)](store::SessionResult r) {
    FinishClaim(context, &r);
    done(std::move(r));
  });
}

void Allocator::FinishClaim(const ClaimContext& req, store::SessionResult* r) {
  switch (r->outcome) {
    case Outcome::kOk:
      stats_.claims_ok.fetch_add(1, std::memory_order_relaxed);
      CountPoolClaim(r->session.region, r->session.pool, true);
      break;
    case Outcome::kReplayed:
      stats_.claims_replayed.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::kQuotaExceeded:
      stats_.claims_quota.fetch_add(1, std::memory_order_relaxed);
      r->message = "tenant " + req.tenant + " holds its maximum of " +
                   std::to_string(req.max_sessions) + " sessions";
      break;
    case Outcome::kNoCapacity:
      stats_.claims_no_capacity.fetch_add(1, std::memory_order_relaxed);
      CountPoolClaim(req.region, req.pool, false);
      r->message = "no healthy available container in pool " + req.pool + " of region " +
                   req.region + (req.has_fallbacks ? " or its fallback regions" : "");
      break;
    default: stats_.claims_error.fetch_add(1, std::memory_order_relaxed); break;
  }
}

void Allocator::CountPoolClaim(const std::string& region, const std::string& pool, bool ok) {
  // A session's pool exists; a refused claim may name any made-up one.
  if (!ok && pool_exists_ && !pool_exists_(region, pool)) {
    stats_.claims_unknown_pool.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  base::MutexLock lock(&pool_claims_mu_);
  auto it = pool_claims_.find(PoolKey(region, pool));
  if (it == pool_claims_.end()) {
    if (pool_claims_.size() >= kMaxCountedPools) return;
    it = pool_claims_.emplace(PoolKey(region, pool), PoolClaimCounts{}).first;
  }
  ++(ok ? it->second.ok : it->second.no_capacity);
}

std::map<PoolKey, PoolClaimCounts> Allocator::PoolClaims() const {
  base::MutexLock lock(&pool_claims_mu_);
  return pool_claims_;
}

void Allocator::Release(const store::Caller& caller, std::string session_id, int64_t token,
                        store::SessionCallback done) {
  storage_->Release(caller, std::move(session_id), token,
                    Counted(&stats_.releases, [this, done = std::move(done)](
                                                  store::SessionResult r) {
                      if (r.outcome == Outcome::kOk) WakeWaiters();
                      done(std::move(r));
                    }));
}

// ---- Claims that wait ----

void Allocator::OnFirstClaimed(const WaiterPtr& w, store::SessionResult r) {
  // Counted back only once what it brings is queued or kept, so that Stop,
  // seeing none in flight, misses no session to release.
  auto back = [this] {
    base::MutexLock lock(&wait_mu_);
    --first_claims_in_flight_;
    drain_cv_.SignalAll();
  };
  if (r.outcome == Outcome::kNoCapacity && !Abandoned(*w)) {
    Enqueue(w);
    return back();
  }
  if (r.outcome == Outcome::kOk && Abandoned(*w)) {
    {
      base::MutexLock lock(&wait_mu_);
      AbandonLocked(*w, r.session);
      --first_claims_in_flight_;
      drain_cv_.SignalAll();
    }
    return AnswerGone(w);
  }
  ClaimContext context{w->req.caller.tenant, w->req.region, w->req.pool,
                       !w->req.fallback_regions.empty(),
                       store::TenantQuota(storage_->policy(), w->req.caller)};
  FinishClaim(context, &r);
  back();  // last: Stop may return once it is counted back
  w->done(std::move(r));
}

void Allocator::AbandonLocked(const Waiter& w, const store::Session& session) {
  stats_.waits_abandoned.fetch_add(1, std::memory_order_relaxed);
  if (!w.req.idempotency_key.empty()) {
    // A retry of the key (through another connection or node, perhaps
    // answered already) replays this session: its client may hold it. It
    // ends by its lease or by that client's release, never here.
    stats_.abandoned_sessions_kept.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (stopped_) {
    // Nothing releases any more: it ends by its lease.
    stats_.abandoned_releases_failed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Nobody will read it: handed back on the waiters' thread (or by Stop),
  // not on this writer thread. The next in line may then find it.
  to_release_.push_back(PendingRelease{session, 0, 0, base::NowMs() + w.req.lease_ms});
  wake_ = true;
  wait_cv_.Signal();
  drain_cv_.SignalAll();
}

void Allocator::AnswerGone(const WaiterPtr& w) {
  store::SessionResult r;
  r.outcome = Outcome::kNoCapacity;
  r.message = "the client went away while its claim waited";
  w->done(std::move(r));
}

void Allocator::TakeDueReleasesLocked(int64_t now, std::vector<PendingRelease>* due,
                                      int64_t* next_ms) {
  for (auto it = to_release_.begin(); it != to_release_.end();) {
    if (it->attempts > 0 && now >= it->give_up_ms) {
      // Failed until its lease ended: the reaper ends it now.
      stats_.abandoned_releases_failed.fetch_add(1, std::memory_order_relaxed);
      it = to_release_.erase(it);
    } else if (it->next_try_ms <= now) {
      due->push_back(std::move(*it));
      it = to_release_.erase(it);
    } else {
      *next_ms = std::min(*next_ms, it->next_try_ms);
      ++it;
    }
  }
  releases_in_flight_ += static_cast<int>(due->size());
}

void Allocator::SubmitReleases(std::vector<PendingRelease> releases) {
  store::Caller admin;
  admin.admin = true;
  for (auto& p : releases) {
    std::string id = p.session.session_id;
    const int64_t token = p.session.token;
    storage_->Release(admin, std::move(id), token,
                      [this, p = std::move(p)](store::SessionResult r) mutable {
                        OnAbandonedReleased(std::move(p), r.outcome);
                      });
  }
}

void Allocator::OnAbandonedReleased(PendingRelease p, Outcome outcome) {
  {
    base::MutexLock lock(&wait_mu_);
    --releases_in_flight_;
    // The store down or busy: tried again later, until its lease would have
    // ended anyway (TakeDueReleasesLocked). Any other answer is final: ok,
    // or not_found / stale_token (it ended meanwhile: its lease ran out).
    if (outcome == Outcome::kError || outcome == Outcome::kOverloaded) {
      ++p.attempts;
      if (stopped_) {
        stats_.abandoned_releases_failed.fetch_add(1, std::memory_order_relaxed);
      } else {
        p.next_try_ms = base::NowMs() + ReleaseRetryDelayMs(p.attempts, wait_stop_);
        to_release_.push_back(std::move(p));
      }
    }
    // Woken here, under the lock: once Stop sees this release back it may
    // return and the Allocator go, so nothing after the lock may touch it.
    if (outcome == Outcome::kOk && any_waiters_.load()) {
      wake_ = true;
      wait_cv_.Signal();
    }
    drain_cv_.SignalAll();
  }
}

void Allocator::EndWaits() {
  {
    base::MutexLock lock(&wait_mu_);
    wait_stop_ = true;
  }
  // The waiters' thread answers every waiter not with the storage and ends;
  // those with it are answered by their claim's callback (OnWaiterClaimed
  // queues nobody once wait_stop_ is set).
  wait_cv_.SignalAll();
}

std::vector<PoolKey> Allocator::PoolsOf(const store::ClaimRequest& req) {
  std::vector<PoolKey> pools;
  pools.reserve(1 + req.fallback_regions.size());
  pools.emplace_back(req.region, req.pool);
  for (const auto& region : req.fallback_regions) pools.emplace_back(region, req.pool);
  return pools;
}

std::string Allocator::OverBoundLocked(const Waiter& w) {
  auto it = waiters_.find(PoolKey(w.req.region, w.req.pool));
  if (it != waiters_.end() &&
      it->second.size() >= static_cast<size_t>(options_.max_waiters_per_pool)) {
    return std::to_string(options_.max_waiters_per_pool) + " claims already wait for pool " +
           w.req.pool + " of region " + w.req.region + " (--max-claim-waiters)";
  }
  const store::TenantLimits& limits = w.req.caller.limits;
  const bool own = limits.max_waiters != store::TenantLimits::kUnset;
  const int64_t tenant_bound = own ? limits.max_waiters : options_.max_waiters_per_tenant;
  auto t = tenant_waiting_.find(w.req.caller.tenant);
  const int64_t tenant_has = t == tenant_waiting_.end() ? 0 : t->second;
  if (tenant_has + w.cost() > tenant_bound) {
    return "tenant " + w.req.caller.tenant + " already has " + std::to_string(tenant_has) +
           " of its " + std::to_string(tenant_bound) +
           " waiting claims (a claim counts once per region it names; " +
           (own ? "its max_waiters in the keys file)" : "--max-claim-waiters-per-tenant)");
  }
  if (total_waiting_ + w.cost() > options_.max_waiters_total) {
    return std::to_string(total_waiting_) + " of " + std::to_string(options_.max_waiters_total) +
           " waiting claims are taken (--max-claim-waiters-total)";
  }
  return "";
}

void Allocator::UncountLocked(const Waiter& w) {
  stats_.waiting.fetch_sub(1, std::memory_order_relaxed);
  total_waiting_ -= w.cost();
  auto t = tenant_waiting_.find(w.req.caller.tenant);
  if (t != tenant_waiting_.end() && (t->second -= w.cost()) <= 0) tenant_waiting_.erase(t);
}

int64_t Allocator::WaitingOf(const std::string& tenant) const {
  base::MutexLock lock(&wait_mu_);
  auto t = tenant_waiting_.find(tenant);
  return t == tenant_waiting_.end() ? 0 : t->second;
}

void Allocator::Enqueue(WaiterPtr w) {
  bool ended = false;
  std::string refused;
  w->pools = PoolsOf(w->req);
  {
    base::MutexLock lock(&wait_mu_);
    ended = wait_stop_;
    if (!wait_stop_) {
      refused = OverBoundLocked(*w);
      if (refused.empty()) {
        waiters_[PoolKey(w->req.region, w->req.pool)].push_back(w);
        stats_.waiting.fetch_add(1, std::memory_order_relaxed);
        total_waiting_ += w->cost();
        tenant_waiting_[w->req.caller.tenant] += w->cost();
        any_waiters_.store(true);
        // Probed at once: a claim for a pool nobody registered never waits.
        wake_ = true;
        wait_cv_.Signal();
        return;
      }
    }
  }
  // Stopping: nothing waits any more; the claim found nothing.
  if (ended) return AnswerWaiter(w, Outcome::kNoCapacity, "");
  stats_.waits_refused.fetch_add(1, std::memory_order_relaxed);
  AnswerWaiter(w, Outcome::kOverloaded, std::move(refused));
}

void Allocator::AnswerWaiter(const WaiterPtr& w, Outcome outcome, std::string message) {
  store::SessionResult r;
  r.outcome = outcome;
  r.message = std::move(message);
  ClaimContext context{w->req.caller.tenant, w->req.region, w->req.pool,
                       !w->req.fallback_regions.empty()};
  FinishClaim(context, &r);
  if (outcome == Outcome::kNoCapacity) {
    r.message += " after waiting " + std::to_string(base::NowMs() - w->started_ms) + " ms";
  }
  w->done(std::move(r));
}

void Allocator::OnWaiterClaimed(const WaiterPtr& w, store::SessionResult r) {
  bool abandoned = false;
  {
    base::MutexLock lock(&wait_mu_);
    w->in_flight = false;
    if (r.outcome == Outcome::kNoCapacity && !wait_stop_ && base::NowMs() < w->deadline_ms &&
        !Abandoned(*w)) {
      return;  // still first in line; tries again when woken
    }
    auto it = waiters_.find(PoolKey(w->req.region, w->req.pool));
    if (it != waiters_.end()) {
      auto& queue = it->second;
      for (auto q = queue.begin(); q != queue.end(); ++q) {
        if (*q == w) {
          queue.erase(q);
          UncountLocked(*w);
          break;
        }
      }
      if (queue.empty()) waiters_.erase(it);
    }
    any_waiters_.store(!waiters_.empty());
    drain_cv_.SignalAll();  // Stop may wait for this answer
    if (r.outcome == Outcome::kOk && Abandoned(*w)) {
      abandoned = true;
      AbandonLocked(*w, r.session);
    }
    // The next in line may find a container too (or, for an abandoned
    // session, the one released for it).
    if (r.outcome == Outcome::kOk) {
      wake_ = true;
      wait_cv_.Signal();
    }
    // Counted under the lock too: once this waiter is out of waiters_, Stop
    // may return and the Allocator go; below the lock only w is touched.
    if (!abandoned) {
      if (r.outcome == Outcome::kOk) {
        stats_.waits_served.fetch_add(1, std::memory_order_relaxed);
      } else if (r.outcome == Outcome::kNoCapacity) {
        stats_.waits_timed_out.fetch_add(1, std::memory_order_relaxed);
      }
      ClaimContext context{w->req.caller.tenant, w->req.region, w->req.pool,
                           !w->req.fallback_regions.empty(),
                           store::TenantQuota(storage_->policy(), w->req.caller)};
      FinishClaim(context, &r);
    }
  }
  if (abandoned) return AnswerGone(w);
  if (r.outcome == Outcome::kNoCapacity) {
    r.message += " after waiting " + std::to_string(base::NowMs() - w->started_ms) + " ms";
  }
  w->done(std::move(r));
}

void Allocator::WakeWaiters() {
  if (!any_waiters_.load()) return;
  base::MutexLock lock(&wait_mu_);
  wake_ = true;
  wait_cv_.Signal();
}

void Allocator::WaiterLoop() {
  for (;;) {
    std::vector<WaiterPtr> timed_out, gone, stopping, unregistered, to_try;
    std::vector<PendingRelease> releases;
    std::vector<store::PoolProbe> probes;
    bool stop = false;
    {
      base::MutexLock lock(&wait_mu_);
      if (!wait_stop_ && !wake_) {
        // At most until the next failed release is due again.
        int64_t wait_ms = options_.wait_retry_ms;
        const int64_t before = base::NowMs();
        for (const auto& p : to_release_) {
          wait_ms = std::min(wait_ms, std::max<int64_t>(0, p.next_try_ms - before));
        }
        if (wait_ms > 0) wait_cv_.WaitFor(&wait_mu_, std::chrono::milliseconds(wait_ms));
      }
      wake_ = false;
      stop = wait_stop_;
      const int64_t now = base::NowMs();
      int64_t next_ms = now;  // unused here: the wait above looks again
      TakeDueReleasesLocked(now, &releases, &next_ms);
      std::set<PoolKey> to_probe;
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        auto& queue = it->second;
        for (auto q = queue.begin(); q != queue.end();) {
          const WaiterPtr& w = *q;
          std::vector<WaiterPtr>* out = nullptr;
          if (w->in_flight) {
            out = nullptr;  // answered by its claim's callback
          } else if (stop) {
            out = &stopping;
          } else if (Abandoned(*w)) {
            out = &gone;
          } else if (now >= w->deadline_ms) {
            out = &timed_out;
          }
          if (out == nullptr) {
            // New ones are probed for being registered at all.
            if (!w->in_flight && !w->probed) {
              to_probe.insert(w->pools.begin(), w->pools.end());
            }
            ++q;
            continue;
          }
          out->push_back(w);
          UncountLocked(*w);
          q = queue.erase(q);
        }
        // The first in line is probed for a container it could take.
        if (!stop && !queue.empty() && !queue.front()->in_flight) {
          to_probe.insert(queue.front()->pools.begin(), queue.front()->pools.end());
        }
        it = queue.empty() ? waiters_.erase(it) : std::next(it);
      }
      any_waiters_.store(!waiters_.empty());
      for (const auto& [region, pool] : to_probe) probes.push_back({region, pool});
    }
    for (const auto& w : timed_out) {
      stats_.waits_timed_out.fetch_add(1, std::memory_order_relaxed);
      AnswerWaiter(w, Outcome::kNoCapacity, "");
    }
    for (const auto& w : gone) {
      stats_.waits_abandoned.fetch_add(1, std::memory_order_relaxed);
      AnswerWaiter(w, Outcome::kNoCapacity, "");
    }
    for (const auto& w : stopping) AnswerWaiter(w, Outcome::kNoCapacity, "");
    SubmitReleases(std::move(releases));
    if (stop) return;
    if (probes.empty()) continue;

    // One read for every waiting pool, off the write path. A failed probe
    // leaves the waiters as they are and lets the first in line of each
    // pool claim, as if every pool could serve: correct, only dearer.
    stats_.wait_probes.fetch_add(1, std::memory_order_relaxed);
    const bool probed = storage_->ProbePools(&probes).ok();
    if (!probed) stats_.wait_probes_failed.fetch_add(1, std::memory_order_relaxed);
    std::map<PoolKey, const store::PoolProbe*> seen;
    for (const auto& p : probes) seen.emplace(PoolKey(p.region, p.pool), &p);
    auto all_probed = [&](const Waiter& w) {
      for (const auto& key : w.pools) {
        if (!seen.contains(key)) return false;  // queued since: the next round
      }
      return true;
    };
    auto any_of = [&](const Waiter& w, bool store::PoolProbe::*field) {
      for (const auto& key : w.pools) {
        auto it = seen.find(key);
        if (it != seen.end() && it->second->*field) return true;
      }
      return false;
    };
    {
      base::MutexLock lock(&wait_mu_);
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        auto& queue = it->second;
        for (auto q = queue.begin(); q != queue.end();) {
          const WaiterPtr& w = *q;
          if (w->in_flight || w->probed || !probed || !all_probed(*w)) {
            if (!probed) w->probed = true;
            ++q;
            continue;
          }
          if (!any_of(*w, &store::PoolProbe::registered)) {
            unregistered.push_back(w);
            UncountLocked(*w);
            q = queue.erase(q);
            continue;
          }
          w->probed = true;
          ++q;
        }
        if (!wait_stop_ && !queue.empty() && !queue.front()->in_flight &&
            (!probed || any_of(*queue.front(), &store::PoolProbe::claimable))) {
          queue.front()->in_flight = true;
          to_try.push_back(queue.front());
        }
        it = queue.empty() ? waiters_.erase(it) : std::next(it);
      }
      any_waiters_.store(!waiters_.empty());
    }
    for (const auto& w : unregistered) {
      stats_.waits_unregistered.fetch_add(1, std::memory_order_relaxed);
      store::SessionResult r;
      r.outcome = Outcome::kNoCapacity;
      ClaimContext context{w->req.caller.tenant, w->req.region, w->req.pool,
                           !w->req.fallback_regions.empty()};
      FinishClaim(context, &r);
      r.message = "no container of pool " + w->req.pool + " is registered in region " +
                  w->req.region + (w->req.fallback_regions.empty() ? "" : " or its fallback regions") +
                  ": the claim does not wait";
      w->done(std::move(r));
    }
    for (const auto& w : to_try) {
      storage_->Claim(w->req, [this, w](store::SessionResult r) { OnWaiterClaimed(w, std::move(r)); });
    }
  }
}

void Allocator::Renew(const store::Caller& caller, std::string session_id, int64_t token,
                      int64_t lease_ms, store::SessionCallback done) {
  assert(lease_ms >= 0 && lease_ms <= options_.max_lease_ms);
  storage_->Renew(caller, std::move(session_id), token,
                  lease_ms > 0 ? lease_ms : options_.default_lease_ms,
                  Counted(&stats_.renewals, std::move(done)));
}

store::SessionCallback Allocator::Counted(std::atomic<uint64_t>* ok,
                                          store::SessionCallback done) {
  return [this, ok, done = std::move(done)](store::SessionResult r) {
    if (r.outcome == Outcome::kOk) {
      ok->fetch_add(1, std::memory_order_relaxed);
    } else if (r.outcome == Outcome::kStaleToken) {
      stats_.stale_tokens.fetch_add(1, std::memory_order_relaxed);
    }
    done(std::move(r));
  };
}

store::SessionResult Allocator::GetSession(const store::Caller& caller,
                                           std::string_view session_id) {
  return storage_->GetSession(caller, session_id);
}

store::Status Allocator::Limits(const std::string& tenant, TenantLimits* out) {
  out->max_sessions = storage_->policy().max_sessions_per_tenant;
  return storage_->CountTenantSessions(tenant, &out->sessions);
}

store::Status Allocator::ListSessions(const store::SessionFilter& filter,
                                     const std::string& after, int limit,
                                     std::vector<store::Session>* page,
                                     std::string* next_after) {
  return storage_->ListSessions(filter, after, limit, page, next_after);
}

int64_t Allocator::ReapExpiredLeases() {
  int64_t ended_total = 0;
  for (int p = 0; p < storage_->partitions(); ++p) {
    // A backlog is ended in several short transactions, not one long one.
    for (int sweep = 0; sweep < options_.max_sweeps_per_reap; ++sweep) {
      int64_t ended = 0;
      if (!storage_->SweepExpiredLeases(p, options_.reaper_batch_rows, &ended).ok()) break;
      ended_total += ended;
      stats_.lease_expiries.fetch_add(static_cast<uint64_t>(ended), std::memory_order_relaxed);
      if (ended < options_.reaper_batch_rows) break;
    }
  }
  if (ended_total > 0) WakeWaiters();
  return ended_total;
}

void Allocator::ReaperLoop() {
  for (;;) {
    {
      base::MutexLock lock(&reaper_mu_);
      if (!reaper_stop_) {
        reaper_cv_.WaitFor(&reaper_mu_, std::chrono::milliseconds(options_.reaper_interval_ms));
      }
      if (reaper_stop_) return;
    }
    ReapExpiredLeases();
  }
}

}  // namespace allocator
