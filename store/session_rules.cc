#include "store/session_rules.h"

namespace store {

std::optional<SessionResult> RefuseSessionRead(const Caller& caller, const std::string& id,
                                               const StoredSession& stored, int64_t now_ms) {
  if (!caller.admin && stored.tenant != caller.tenant) {
    return Failed<SessionResult>(Outcome::kForbidden, "session " + id + " belongs to another tenant");
  }
  if (stored.lease_expires_at_ms <= now_ms) {
    return Failed<SessionResult>(Outcome::kNotFound, "session " + id + " has expired");
  }
  return std::nullopt;
}

SessionResult AnswerSessionRead(const Caller& caller, const std::string& id, const Status& read,
                                std::optional<Session> found, int64_t now_ms) {
  if (!read.ok()) return Failed<SessionResult>(OutcomeOfError(read), read.ToString());
  if (!found) return Failed<SessionResult>(Outcome::kNotFound, "no session " + id);
  if (auto refused = RefuseSessionRead(caller, id, StoredOf(*found), now_ms)) return *refused;
  return SessionResult{Outcome::kOk, std::move(*found), ""};
}

Status ExplainFailedCas(const Caller& caller, const std::string& id, int64_t token,
                        const StoredSession* stored, int64_t now_ms, SessionResult* out) {
  if (stored == nullptr) {
    *out = Failed<SessionResult>(Outcome::kNotFound, "no session " + id);
  } else if (auto refused = RefuseSessionRead(caller, id, *stored, now_ms)) {
    *out = std::move(*refused);
  } else if (stored->token != token) {
    *out = Failed<SessionResult>(Outcome::kStaleToken, "token " + std::to_string(token) +
                                                           " is not current for session " + id);
  } else {
    return Status::IOError("compare-and-swap on session " + id + " failed for an unknown reason");
  }
  return Status::Ok();
}

int64_t TenantQuota(const ClaimPolicy& policy, const Caller& caller) {
  return caller.limits.max_sessions != TenantLimits::kUnset ? caller.limits.max_sessions
                                                            : policy.max_sessions_per_tenant;
}

}  // namespace store
