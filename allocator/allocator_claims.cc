// The Allocator's claims, releases and renewals (allocator.h): the lease
// policy applied, each result counted, a claim that may wait handed to the
// waiting room.

#include <cassert>
#include <utility>

#include "allocator/allocator.h"
#include "store/session_rules.h"

namespace allocator {

using store::Outcome;

void Allocator::Claim(store::ClaimRequest req, store::SessionCallback done,
                      std::function<bool()> abandoned) {
  assert(req.lease_ms >= 0 && req.lease_ms <= options_.max_lease_ms);
  assert(req.wait_ms >= 0 && req.wait_ms <= kMaxClaimWaitMs);
  if (req.lease_ms == 0) req.lease_ms = options_.default_lease_ms;
  done = CountServedBy(req.region, std::move(done));
  // What the message needs, kept apart from the request the storage takes.
  ClaimContext context = ContextOf(req, store::TenantQuota(storage_->policy(), req.caller));
  // The region's backup is one of the regions the claim may take a
  // container of; each attempt is routed (RegionBackups::Routed).
  backups_.AddBackup(&req);
  if (req.wait_ms > 0) {
    return waiting_room_.Claim(std::move(req), std::move(done), std::move(abandoned));
  }
  // A pool the mirror does not know may not exist: the waiting room reads
  // it before the answer (unknown_pool or no_capacity), off this writer's
  // thread; the request is kept for that.
  store::ClaimRequest kept;
  if (!KnownToDirectory(req)) kept = req;
  storage_->Claim(backups_.Routed(req),
                  [this, context = std::move(context), kept = std::move(kept),
                   done = std::move(done)](store::SessionResult r) mutable {
                    if (r.outcome == Outcome::kNoCapacity && !kept.region.empty()) {
                      return waiting_room_.AnswerOnceProbed(std::move(kept), std::move(done));
                    }
                    claims_.Finish(context, &r);
                    done(std::move(r));
                  });
}

store::SessionCallback Allocator::CountServedBy(const std::string& home,
                                               store::SessionCallback done) {
  return [this, home, done = std::move(done)](store::SessionResult r) {
    if (r.outcome == Outcome::kOk || r.outcome == Outcome::kReplayed) {
      const ServedBy by = backups_.ServedByOf(home, r.session.region);
      r.served_by = ServedByName(by);
      std::atomic<uint64_t>& count = by == ServedBy::kHome       ? stats_.served_home
                                     : by == ServedBy::kFallback ? stats_.served_fallback
                                                                 : stats_.served_backup;
      count.fetch_add(1, std::memory_order_relaxed);
    }
    done(std::move(r));
  };
}

bool Allocator::KnownToDirectory(const store::ClaimRequest& req) const {
  if (!directory_.exists) return false;
  if (directory_.exists(req.region, req.pool)) return true;
  for (const auto& region : req.fallback_regions) {
    if (directory_.exists(region, req.pool)) return true;
  }
  return false;
}

void Allocator::Release(const store::Caller& caller, std::string session_id, int64_t token,
                        store::SessionCallback done) {
  storage_->Release(caller, std::move(session_id), token,
                    Counted(&stats_.releases, [this, done = std::move(done)](
                                                  store::SessionResult r) {
                      // A repeated release (SessionResult::end set) ended nothing.
                      if (r.outcome == Outcome::kOk && r.end.reason.empty()) {
                        stats_.sessions_released.fetch_add(1, std::memory_order_relaxed);
                      }
                      if (r.outcome == Outcome::kOk) waiting_room_.Wake();
                      done(std::move(r));
                    }));
}

void Allocator::Renew(const store::Caller& caller, std::string session_id, int64_t token,
                      int64_t lease_ms, store::SessionCallback done, bool shorten) {
  assert(lease_ms >= 0 && lease_ms <= options_.max_lease_ms);
  storage_->Renew(caller, std::move(session_id), token,
                  lease_ms > 0 ? lease_ms : options_.default_lease_ms, shorten,
                  Counted(&stats_.renewals, std::move(done)));
}

store::SessionCallback Allocator::Counted(std::atomic<uint64_t>* ok,
                                               store::SessionCallback done) {
  return [this, ok, done = std::move(done)](store::SessionResult r) {
    // A kOk that carries an end is a release repeated: it did nothing.
    if (r.outcome == Outcome::kOk && r.end.reason.empty()) {
      ok->fetch_add(1, std::memory_order_relaxed);
    } else if (r.outcome == Outcome::kStaleToken) {
      stats_.stale_tokens.fetch_add(1, std::memory_order_relaxed);
    }
    done(std::move(r));
  };
}

}  // namespace allocator
