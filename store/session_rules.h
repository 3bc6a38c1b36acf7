#ifndef EDGEALLOC_STORE_SESSION_RULES_H_
#define EDGEALLOC_STORE_SESSION_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/status.h"
#include "store/types.h"

namespace store {

// The rules every engine answers session reads and failed compare-and-swaps
// by, written once. A stored session as an engine found it:
struct StoredSession {
  std::string_view tenant;
  int64_t lease_expires_at_ms = 0;
  int64_t token = 0;  // the container's generation
};

// The stored session of a session row as read (store/row_columns.h).
inline StoredSession StoredOf(const Session& s) {
  return {s.tenant, s.lease_expires_at_ms, s.token};
}

// Whether `caller` may read session `id` as stored, at now_ms: nullopt if
// so; else kForbidden (another tenant's: checked first, so another tenant
// does not learn that it existed and when it ended) or kNotFound (its lease
// is over).
std::optional<SessionResult> RefuseSessionRead(const Caller& caller, const std::string& id,
                                               const StoredSession& stored, int64_t now_ms);

// GetSession's answer, from its read: the read's error (as its outcome), no
// such session, RefuseSessionRead's refusal at now_ms, or the session.
SessionResult AnswerSessionRead(const Caller& caller, const std::string& id, const Status& read,
                                std::optional<Session> found, int64_t now_ms);

// After a compare-and-swap on (id, token) changed nothing: why not, from the
// session as stored now (`stored` null: no such session). kNotFound,
// kForbidden, kStaleToken into *out; an IOError if none of them explains it.
Status ExplainFailedCas(const Caller& caller, const std::string& id, int64_t token,
                        const StoredSession* stored, int64_t now_ms, SessionResult* out);

// The most live sessions `caller`'s tenant may hold: its own max_sessions
// (TenantLimits, from the keys file) when set, else the policy's
// max_sessions_per_tenant; kUnlimited for none. What every engine's claim
// counts against and names in its quota refusal.
int64_t TenantQuota(const ClaimPolicy& policy, const Caller& caller);

}  // namespace store

#endif  // EDGEALLOC_STORE_SESSION_RULES_H_
