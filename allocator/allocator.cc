#include "allocator/allocator.h"

#include <cassert>
#include <chrono>
#include <iterator>
#include <utility>

#include "base/clock.h"

namespace allocator {

using store::Outcome;

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
        if (!w->in_flight) left.push_back(w);
      }
      std::erase_if(queue, [](const WaiterPtr& w) { return !w->in_flight; });
    }
    std::erase_if(waiters_, [](const auto& entry) { return entry.second.empty(); });
    stats_.waiting.fetch_sub(static_cast<int64_t>(left.size()), std::memory_order_relaxed);
  }
  for (const auto& w : left) AnswerWaiter(w, Outcome::kNoCapacity, "");
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
    }
    // First come, first served: behind the claims already waiting.
    if (others_wait) return Enqueue(std::move(w));
    storage_->Claim(std::move(req), [this, w](store::SessionResult r) {
      if (r.outcome == Outcome::kNoCapacity && !Abandoned(*w)) return Enqueue(w);
      ClaimContext context{w->req.caller.tenant, w->req.region, w->req.pool,
                           !w->req.fallback_regions.empty()};
      FinishClaim(context, &r);
      w->done(std::move(r));
    });
    return;
  }
  // What the message needs, kept apart from the request the storage takes.
  ClaimContext context{req.caller.tenant, req.region, req.pool, !req.fallback_regions.empty()};
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
                   std::to_string(storage_->policy().max_sessions_per_tenant) + " sessions";
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

void Allocator::Enqueue(WaiterPtr w) {
  {
    base::MutexLock lock(&wait_mu_);
    if (!wait_stop_) {
      auto& queue = waiters_[PoolKey(w->req.region, w->req.pool)];
      if (queue.size() < static_cast<size_t>(options_.max_waiters_per_pool)) {
        queue.push_back(std::move(w));
        stats_.waiting.fetch_add(1, std::memory_order_relaxed);
        any_waiters_.store(true);
        return;
      }
      if (queue.empty()) waiters_.erase(PoolKey(w->req.region, w->req.pool));
    }
  }
  stats_.waits_refused.fetch_add(1, std::memory_order_relaxed);
  AnswerWaiter(w, Outcome::kOverloaded,
               std::to_string(options_.max_waiters_per_pool) + " claims already wait for pool " +
                   w->req.pool + " of region " + w->req.region + " (--max-claim-waiters)");
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
          stats_.waiting.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
      }
      if (queue.empty()) waiters_.erase(it);
    }
    any_waiters_.store(!waiters_.empty());
    if (r.outcome == Outcome::kOk && Abandoned(*w)) {
      // Nobody will read this session: hand it back (on the waiters' thread,
      // not on this writer thread).
      abandoned = true;
      to_release_.push_back(r.session);
    }
    // The next in line may find a container too (or, for an abandoned
    // session, the one released for it).
    if (r.outcome == Outcome::kOk) {
      wake_ = true;
      wait_cv_.Signal();
    }
  }
  if (abandoned) {
    stats_.waits_abandoned.fetch_add(1, std::memory_order_relaxed);
    r.outcome = Outcome::kNoCapacity;
    r.message = "the client went away while its claim waited";
    r.session = {};
    return w->done(std::move(r));
  }
  if (r.outcome == Outcome::kOk) {
    stats_.waits_served.fetch_add(1, std::memory_order_relaxed);
  } else if (r.outcome == Outcome::kNoCapacity) {
    stats_.waits_timed_out.fetch_add(1, std::memory_order_relaxed);
  }
  ClaimContext context{w->req.caller.tenant, w->req.region, w->req.pool,
                       !w->req.fallback_regions.empty()};
  FinishClaim(context, &r);
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
    std::vector<WaiterPtr> to_try, timed_out, gone, stopping;
    std::vector<store::Session> releases;
    bool stop = false;
    {
      base::MutexLock lock(&wait_mu_);
      if (!wait_stop_ && !wake_) {
        wait_cv_.WaitFor(&wait_mu_, std::chrono::milliseconds(options_.wait_retry_ms));
      }
      wake_ = false;
      stop = wait_stop_;
      releases.swap(to_release_);
      const int64_t now = base::NowMs();
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
            ++q;
            continue;
          }
          out->push_back(w);
          q = queue.erase(q);
          stats_.waiting.fetch_sub(1, std::memory_order_relaxed);
        }
        if (!stop && !queue.empty() && !queue.front()->in_flight) {
          queue.front()->in_flight = true;
          to_try.push_back(queue.front());
        }
        it = queue.empty() ? waiters_.erase(it) : std::next(it);
      }
      any_waiters_.store(!waiters_.empty());
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
    store::Caller admin;
    admin.admin = true;
    for (auto& s : releases) {
      storage_->Release(admin, s.session_id, s.token, [this](store::SessionResult r) {
        if (r.outcome == Outcome::kOk) WakeWaiters();
      });
    }
    for (const auto& w : to_try) {
      storage_->Claim(w->req, [this, w](store::SessionResult r) { OnWaiterClaimed(w, std::move(r)); });
    }
    if (stop) return;
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
                                     std::vector<store::Session>* page, bool* more) {
  return storage_->ListSessions(filter, after, limit, page, more);
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
