#ifndef EDGEALLOC_STORE_CLAIM_REGIONS_H_
#define EDGEALLOC_STORE_CLAIM_REGIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "store/status.h"
#include "store/types.h"

namespace store {

// A claim's course through its regions inside one write transaction,
// written once for every engine: the idempotency key's live session first,
// then the claim statement region by region (the first with a fitting
// container wins), then, when nothing fitted, whether the quota was why.
// The engine supplies only its statements, as `Statements` with:
//   Status FindIdempotent(SessionResult* found);  // kReplayed if found
//   Status ClaimIn(const std::string& region, bool* claimed, SessionResult* out);
//   Status KeyHeld(bool* held);  // a session, live or not, holds req's key
//   Status ForgetExpiredKey();
//   Status CountTenantSessions(int64_t* sessions);  // as `quota` counts them
//   Status AnySelectorMatch(const std::string& region, bool* any);  // req.selector
// regions[first, last) are tried; `quota` is what the claim statement held
// the tenant to (kUnlimited: none).
template <typename Statements>
Status ClaimInRegions(Statements& statements, const ClaimRequest& req,
                      const std::vector<std::string>& regions, size_t first, size_t last,
                      int64_t quota, SessionResult* out) {
  const bool keyed = !req.idempotency_key.empty();
  if (keyed) {
    // A retry of a claim that already holds a session is that session.
    RETURN_IF_ERROR(statements.FindIdempotent(out));
    if (out->outcome == Outcome::kReplayed) return Status::Ok();
  }
  for (size_t i = first; i < last; ++i) {
    bool claimed = false;
    Status s = statements.ClaimIn(regions[i], &claimed, out);
    if (s.ok() && !claimed && keyed) {
      // The claim statement takes nothing while any session holds the key,
      // as the unique index on (tenant, idempotency_key) would refuse it:
      // say so, as the index would.
      bool held = false;
      RETURN_IF_ERROR(statements.KeyHeld(&held));
      if (held) s = Status::Conflict("idempotency key " + req.idempotency_key + " is held");
    }
    if (s.IsConflict() && keyed) {
      // The key is held. By a session written since the look above: that
      // session is the answer (on PostgreSQL, a claim of the same key
      // earlier in this group: the group's first statements, this claim's
      // look among them, all ran before any of its jobs). Or by an expired
      // session, not reaped yet: let it go, claim again.
      // Only this rare path pays for the extra statements.
      RETURN_IF_ERROR(statements.FindIdempotent(out));
      if (out->outcome == Outcome::kReplayed) return Status::Ok();
      RETURN_IF_ERROR(statements.ForgetExpiredKey());
      s = statements.ClaimIn(regions[i], &claimed, out);
    }
    RETURN_IF_ERROR(s);
    if (claimed) return Status::Ok();
  }
  // Nothing fitted: was it the quota? Only this path pays for the count.
  out->outcome = Outcome::kNoCapacity;
  if (quota != kUnlimited) {
    int64_t sessions = 0;
    RETURN_IF_ERROR(statements.CountTenantSessions(&sessions));
    if (sessions >= quota) out->outcome = Outcome::kQuotaExceeded;
  }
  // A selector that matches no container of the pool in these regions,
  // whatever their state, is no_match: a claim never waits for it. Only
  // this path pays for the reads.
  if (out->outcome == Outcome::kNoCapacity && !req.selector.empty()) {
    bool any = false;
    for (size_t i = first; i < last && !any; ++i) {
      RETURN_IF_ERROR(statements.AnySelectorMatch(regions[i], &any));
    }
    if (!any) out->outcome = Outcome::kNoMatch;
  }
  return Status::Ok();
}

}  // namespace store

#endif  // EDGEALLOC_STORE_CLAIM_REGIONS_H_
