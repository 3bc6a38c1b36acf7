#include "store/session_rules.h"

namespace store {

std::optional<SessionResult> RefuseSessionRead(const Caller& caller, const std::string& id,
                                               const StoredSession& stored, int64_t now_ms) {
  if (!caller.admin && stored.tenant != caller.tenant) {
    return Failed<SessionResult>(Outcome::kForbidden, "session " + id + " belongs to another tenant");
  }
  if (stored.lease_expires_at_ms <= now_ms) {
    SessionResult r = Failed<SessionResult>(Outcome::kSessionEnded, "session " + id + " has expired");
    r.end = {"expired", stored.lease_expires_at_ms};
    return r;
  }
  return std::nullopt;
}

SessionResult AnswerEnded(const Caller& caller, const std::string& id, const EndedSession& ended) {
  if (!caller.admin && ended.session.tenant != caller.tenant) {
    return Failed<SessionResult>(Outcome::kForbidden, "session " + id + " belongs to another tenant");
  }
  SessionResult r = Failed<SessionResult>(
      Outcome::kSessionEnded, "session " + id + " has ended (" + ended.end.reason + ")");
  r.session = ended.session;
  r.end = ended.end;
  return r;
}

const char* ReleaseEndReason(const Caller& caller, std::string_view session_tenant) {
  if (caller.abandoning) return "abandoned";
  if (caller.admin && session_tenant != caller.tenant) return "released_by_admin";
  return "released";
}

bool RepeatsRelease(const EndedSession& ended, int64_t token) {
  return ended.session.token == token &&
         (ended.end.reason == "released" || ended.end.reason == "released_by_admin");
}

SessionResult AnswerSessionRead(const Caller& caller, const std::string& id, const Status& read,
                                std::optional<Session> found, std::optional<EndedSession> ended,
                                int64_t now_ms) {
  if (!read.ok()) return Failed<SessionResult>(OutcomeOfError(read), read.ToString());
  if (!found && ended) return AnswerEnded(caller, id, *ended);
  if (!found) return Failed<SessionResult>(Outcome::kNotFound, "no session " + id);
  if (auto refused = RefuseSessionRead(caller, id, StoredOf(*found), now_ms)) return *refused;
  return SessionResult{Outcome::kOk, std::move(*found), "", {}};
}

Status ExplainFailedCas(const Caller& caller, const std::string& id, int64_t token, bool release,
                        const StoredSession* stored, const EndedSession* ended, int64_t now_ms,
                        SessionResult* out) {
  if (stored == nullptr && ended != nullptr) {
    *out = AnswerEnded(caller, id, *ended);
    if (release && out->outcome == Outcome::kSessionEnded && RepeatsRelease(*ended, token)) {
      // The end is kept: a caller counting ends can tell a repeat.
      *out = SessionResult{Outcome::kOk, {}, "", ended->end};
      out->session.session_id = id;
    }
  } else if (stored == nullptr) {
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
