#include "allocator/waiting_room.h"

#include <algorithm>
#include <utility>

#include "allocator/claim_messages.h"
#include "base/clock.h"
#include "store/session_rules.h"

namespace allocator {

using store::Outcome;

WaitingRoom::WaitingRoom(store::Storage* storage, const AllocatorOptions* options,
                         AllocatorStats* stats, ClaimCounts* claims,
                         const PoolDirectory* directory, RegionBackups* backups)
    : storage_(storage), options_(options), stats_(stats), claims_(claims),
      directory_(directory), backups_(backups) {}

void WaitingRoom::Start() {
  base::MutexLock lock(&mu_);
  wait_stop_ = false;
  stopped_ = false;
  started_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  if (!prober_.joinable()) prober_ = std::thread([this] { ProbeLoop(); });
}

void WaitingRoom::Stop() {
  {
    base::MutexLock lock(&mu_);
    wait_stop_ = true;
  }
  wait_cv_.SignalAll();
  probe_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  // A read it is in ends by the storage's own bounds; it claims no more.
  if (prober_.joinable()) prober_.join();
  {
    base::MutexLock lock(&mu_);
    started_ = false;
  }
  // Never started, or queued since it stopped: answered here, so that every
  // claim is answered exactly once.
  std::vector<WaiterPtr> left;
  {
    base::MutexLock lock(&mu_);
    for (const auto& [arrival, w] : arrivals_) {
      if (!w->in_flight) left.push_back(w);
    }
    for (const auto& w : left) RemoveLocked(w);
  }
  for (const auto& w : left) AnswerWaiter(w, Outcome::kNoCapacity, "");
  DrainAtStop();
}

void WaitingRoom::EndWaits() {
  {
    base::MutexLock lock(&mu_);
    wait_stop_ = true;
  }
  // The waiters' thread answers every waiter and ends, the prober too; what
  // the claims still with the storage bring is abandoned (OnWaiterClaimed
  // queues nobody once wait_stop_ is set).
  wait_cv_.SignalAll();
  probe_cv_.SignalAll();
}

void WaitingRoom::Claim(store::ClaimRequest req, store::SessionCallback done,
                        std::function<bool()> abandoned) {
  auto w = std::make_shared<Waiter>();
  w->started_ms = base::NowMs();
  w->deadline_ms = w->started_ms + req.wait_ms;
  w->req = req;
  w->done = std::move(done);
  w->abandoned = std::move(abandoned);
  bool queued = false;
  {
    base::MutexLock lock(&mu_);
    // First come, first served: behind anyone waiting for any pool it names.
    // A claim with a selector is tried once first all the same, so that a
    // selector that matches nothing registered is answered at once
    // (no_match), never after a wait.
    for (const auto& key : PoolsOf(req)) queued = queued || waiters_.contains(key);
    queued = queued && req.selector.empty();
    if (!queued) {
      ++first_claims_in_flight_;
      first_attempts_.insert(w);
    }
  }
  if (queued) return Enqueue(std::move(w));
  // Routed at each attempt: a region that went on its backup meanwhile is
  // not tried.
  storage_->Claim(backups_->Routed(req),
                  [this, w](store::SessionResult r) { OnFirstClaimed(w, std::move(r)); });
}

void WaitingRoom::AnswerOnceProbed(store::ClaimRequest req, store::SessionCallback done) {
  auto w = std::make_shared<Waiter>();
  w->started_ms = base::NowMs();
  w->deadline_ms = w->started_ms;
  w->req = std::move(req);
  w->done = std::move(done);
  w->probe_only = true;
  Enqueue(std::move(w));
}

void WaitingRoom::Wake() {
  if (!any_waiters_.load()) return;
  base::MutexLock lock(&mu_);
  wake_ = true;
  wait_cv_.Signal();
}

ClaimContext WaitingRoom::QuotaContextOf(const store::ClaimRequest& req) const {
  return ContextOf(req, store::TenantQuota(storage_->policy(), req.caller));
}

void WaitingRoom::OnFirstClaimed(const WaiterPtr& w, store::SessionResult r) {
  // Counted back only once what it brings is queued or kept, so that Stop,
  // seeing none in flight, misses no session to release.
  auto back = [this] {
    base::MutexLock lock(&mu_);
    --first_claims_in_flight_;
    drain_cv_.SignalAll();
  };
  {
    // From here on only this callback answers it, unless it was answered.
    base::MutexLock lock(&mu_);
    first_attempts_.erase(w);
    if (w->answered) {
      LateAnswerLocked(*w, r);
      --first_claims_in_flight_;
      drain_cv_.SignalAll();
      return;
    }
  }
  if (r.outcome == Outcome::kNoCapacity && !Abandoned(*w)) {
    Enqueue(w);
    return back();
  }
  if (r.outcome == Outcome::kOk && Abandoned(*w)) {
    {
      base::MutexLock lock(&mu_);
      stats_->waits_abandoned.fetch_add(1, std::memory_order_relaxed);
      AbandonLocked(*w, r.session);
      --first_claims_in_flight_;
      drain_cv_.SignalAll();
    }
    return AnswerGone(w);
  }
  claims_->Finish(QuotaContextOf(w->req), &r);
  back();  // last: Stop may return once it is counted back
  w->done(std::move(r));
}

void WaitingRoom::LateAnswerLocked(const Waiter& w, const store::SessionResult& r) {
  // A replayed session is its key's: a retry of the key replays it again.
  if (r.outcome == Outcome::kOk) AbandonLocked(w, r.session);
}

void WaitingRoom::AnswerGone(const WaiterPtr& w) {
  store::SessionResult r;
  r.outcome = Outcome::kNoCapacity;
  r.message = ClientGoneMessage();
  w->done(std::move(r));
}

std::vector<PoolKey> WaitingRoom::PoolsOf(const store::ClaimRequest& req) {
  std::vector<PoolKey> pools;
  pools.reserve(1 + req.fallback_regions.size());
  pools.emplace_back(req.region, req.pool);
  for (const auto& region : req.fallback_regions) pools.emplace_back(region, req.pool);
  return pools;
}

std::string WaitingRoom::OverBoundLocked(const Waiter& w) {
  for (const auto& key : w.pools) {
    auto it = waiters_.find(key);
    if (it != waiters_.end() &&
        it->second.size() >= static_cast<size_t>(options_->max_waiters_per_pool)) {
      return PoolWaitersFullMessage(options_->max_waiters_per_pool, key.first, key.second);
    }
  }
  const store::TenantLimits& limits = w.req.caller.limits;
  const bool own = limits.max_waiters != store::TenantLimits::kUnset;
  const int64_t tenant_bound = own ? limits.max_waiters : options_->max_waiters_per_tenant;
  auto t = tenant_waiting_.find(w.req.caller.tenant);
  const int64_t tenant_has = t == tenant_waiting_.end() ? 0 : t->second;
  if (tenant_has + w.cost() > tenant_bound) {
    return TenantWaitersFullMessage(w.req.caller.tenant, tenant_has, tenant_bound, own);
  }
  if (total_waiting_ + w.cost() > options_->max_waiters_total) {
    return TotalWaitersFullMessage(options_->max_waiters_total);
  }
  return "";
}

void WaitingRoom::UncountLocked(const Waiter& w) {
  stats_->waiting.fetch_sub(1, std::memory_order_relaxed);
  total_waiting_ -= w.cost();
  auto t = tenant_waiting_.find(w.req.caller.tenant);
  if (t != tenant_waiting_.end() && (t->second -= w.cost()) <= 0) tenant_waiting_.erase(t);
}

int64_t WaitingRoom::WaitingOf(const std::string& tenant) const {
  base::MutexLock lock(&mu_);
  auto t = tenant_waiting_.find(tenant);
  return t == tenant_waiting_.end() ? 0 : t->second;
}

int64_t WaitingRoom::WaitingOn(const PoolKey& pool) const {
  base::MutexLock lock(&mu_);
  auto q = waiters_.find(pool);
  if (q == waiters_.end()) return 0;
  // A claim that does not wait, queued only to be probed, waits for nothing.
  return static_cast<int64_t>(std::count_if(q->second.begin(), q->second.end(),
                                            [](const WaiterPtr& w) { return !w->probe_only; }));
}

void WaitingRoom::Enqueue(WaiterPtr w) {
  bool ended = false;
  std::string refused;
  w->pools = PoolsOf(w->req);
  {
    base::MutexLock lock(&mu_);
    // Not started (an Allocator used without Start): no prober would read
    // a claim that did not wait, so it is answered as before it came here.
    ended = wait_stop_ || (w->probe_only && !started_);
    if (!ended) {
      refused = OverBoundLocked(*w);
      if (refused.empty()) {
        w->arrival = next_arrival_++;
        arrivals_.emplace(w->arrival, w);
        for (const auto& key : w->pools) waiters_[key].push_back(w);
        stats_->waiting.fetch_add(1, std::memory_order_relaxed);
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
  // A claim that did not wait is answered as before it came here.
  if (ended || w->probe_only) return AnswerWaiter(w, Outcome::kNoCapacity, "");
  stats_->waits_refused.fetch_add(1, std::memory_order_relaxed);
  AnswerWaiter(w, Outcome::kOverloaded, std::move(refused));
}

void WaitingRoom::AnswerWaiter(const WaiterPtr& w, Outcome outcome, std::string message) {
  store::SessionResult r;
  r.outcome = outcome;
  r.message = std::move(message);
  // A waiter is refused overloaded by a bound of the room only (Enqueue).
  r.waiter_bound = outcome == Outcome::kOverloaded;
  claims_->Finish(ContextOf(w->req), &r);
  if (outcome == Outcome::kNoCapacity && !w->probe_only) {
    r.message += WaitedSuffix(base::NowMs() - w->started_ms);
    r.retry_after_s = w->retry_after_s;
  }
  w->done(std::move(r));
}

void WaitingRoom::RemoveLocked(const WaiterPtr& w) {
  auto in = arrivals_.find(w->arrival);
  if (in == arrivals_.end() || in->second != w) return;
  arrivals_.erase(in);
  UncountLocked(*w);
  for (const auto& key : w->pools) {
    auto it = waiters_.find(key);
    if (it == waiters_.end()) continue;
    std::erase(it->second, w);
    if (it->second.empty()) {
      waiters_.erase(it);
      turns_.Forget(key);
    }
  }
}

void WaitingRoom::OnWaiterClaimed(const WaiterPtr& w, store::SessionResult r) {
  bool abandoned = false;
  if (r.outcome != Outcome::kOk) stats_->wait_claims_failed.fetch_add(1, std::memory_order_relaxed);
  {
    base::MutexLock lock(&mu_);
    w->in_flight = false;
    const int64_t now = base::NowMs();
    if (r.outcome == Outcome::kNoCapacity && !wait_stop_ && !w->answered &&
        now < w->deadline_ms && !Abandoned(*w)) {
      return;  // still first in line; tries again when woken
    }
    if (r.outcome == Outcome::kOk) turns_.Served({r.session.region, r.session.pool}, now);
    if (r.outcome == Outcome::kNoCapacity) r.retry_after_s = RetryAfterLocked(*w, now);
    RemoveLocked(w);
    any_waiters_.store(!waiters_.empty());
    drain_cv_.SignalAll();  // Stop may wait for this answer
    if (w->answered) {
      // Its client has its answer (AnswerInFlight).
      LateAnswerLocked(*w, r);
      wake_ = true;  // its pools may claim again
      wait_cv_.Signal();
      return;
    }
    if (r.outcome == Outcome::kOk && Abandoned(*w)) {
      abandoned = true;
      stats_->waits_abandoned.fetch_add(1, std::memory_order_relaxed);
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
        stats_->waits_served.fetch_add(1, std::memory_order_relaxed);
      } else if (r.outcome == Outcome::kNoCapacity) {
        stats_->waits_timed_out.fetch_add(1, std::memory_order_relaxed);
      }
      claims_->Finish(QuotaContextOf(w->req), &r);
    }
  }
  if (abandoned) return AnswerGone(w);
  if (r.outcome == Outcome::kNoCapacity) r.message += WaitedSuffix(base::NowMs() - w->started_ms);
  w->done(std::move(r));
}

}  // namespace allocator
