#include "allocator/allocator.h"

#include <cassert>
#include <chrono>
#include <utility>

namespace allocator {

using store::Outcome;

Allocator::Allocator(store::Storage* storage, AllocatorOptions options)
    : storage_(storage), options_(options) {}

Allocator::~Allocator() { Stop(); }

void Allocator::Start() {
  base::MutexLock lock(&reaper_mu_);
  reaper_stop_ = false;
  if (!reaper_.joinable()) reaper_ = std::thread([this] { ReaperLoop(); });
}

void Allocator::Stop() {
  {
    base::MutexLock lock(&reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.SignalAll();
  if (reaper_.joinable()) reaper_.join();
}

void Allocator::Claim(store::ClaimRequest req, store::SessionCallback done) {
  assert(req.lease_ms >= 0 && req.lease_ms <= options_.max_lease_ms);
  if (req.lease_ms == 0) req.lease_ms = options_.default_lease_ms;
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
                    Counted(&stats_.releases, std::move(done)));
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
