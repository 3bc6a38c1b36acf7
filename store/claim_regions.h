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
//   Status ForgetExpiredKey();
//   Status CountTenantSessions(int64_t* sessions);  // as `quota` counts them
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
    if (s.IsConflict() && keyed) {
      // The unique index on (tenant, idempotency_key) refused the key.
      // Another claim of it committed meanwhile: that session is the answer
      // (not on PostgreSQL, whose claims of one key take turns on the key's
      // advisory lock before their groups start, never on the index). Or
      // an expired session, not reaped yet, still holds it: let it go,
      // claim again.
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
  return Status::Ok();
}

}  // namespace store

#endif  // EDGEALLOC_STORE_CLAIM_REGIONS_H_
