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
// does not learn that it existed and when it ended) or kSessionEnded with
// end reason "expired" (its lease is over, the reaper has not freed it yet).
std::optional<SessionResult> RefuseSessionRead(const Caller& caller, const std::string& id,
                                               const StoredSession& stored, int64_t now_ms);

// The answer about session `id`, which is not live but whose end the history
// keeps: kForbidden (another tenant's, unless the caller is admin) or
// kSessionEnded with how it ended.
SessionResult AnswerEnded(const Caller& caller, const std::string& id, const EndedSession& ended);

// GetSession's answer, from its reads: the read's error (as its outcome),
// the ended session's answer (AnswerEnded) when it is not live but `ended`
// is, no such session, RefuseSessionRead's refusal at now_ms, or the session.
SessionResult AnswerSessionRead(const Caller& caller, const std::string& id, const Status& read,
                                std::optional<Session> found, std::optional<EndedSession> ended,
                                int64_t now_ms);

// Whether a release of (`id`, `token`) repeats the release that ended the
// session: the same token, and the session ended by a release. Such a
// release succeeds again (idempotent); any other call on an ended session is
// answered AnswerEnded.
bool RepeatsRelease(const EndedSession& ended, int64_t token);

// Why a release by `caller` of a session of `session_tenant` ended it, as
// kEndReasons spells it: abandoned (the allocator's release for a waiting
// client that went away), released_by_admin (an admin key of another
// tenant), else released. The PostgreSQL engine's statement says the same in
// SQL (store/postgres/session_sql.h).
const char* ReleaseEndReason(const Caller& caller, std::string_view session_tenant);

// After a compare-and-swap on (id, token) changed nothing: why not, from the
// session as stored now (`stored` null: no live session) and its history
// (`ended`, null: none). kOk (a release that RepeatsRelease), kNotFound,
// kForbidden, kSessionEnded, kStaleToken into *out; an IOError if none of
// them explains it.
Status ExplainFailedCas(const Caller& caller, const std::string& id, int64_t token, bool release,
                        const StoredSession* stored, const EndedSession* ended, int64_t now_ms,
                        SessionResult* out);

// The most live sessions `caller`'s tenant may hold: its own max_sessions
// (TenantLimits, from the keys file) when set, else the policy's
// max_sessions_per_tenant; kUnlimited for none. What every engine's claim
// counts against and names in its quota refusal.
int64_t TenantQuota(const ClaimPolicy& policy, const Caller& caller);

}  // namespace store

#endif  // EDGEALLOC_STORE_SESSION_RULES_H_
