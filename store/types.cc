#include "store/types.h"

namespace store {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk: return "ok";
    case Outcome::kReplayed: return "replayed";
    case Outcome::kNoCapacity: return "no_capacity";
    case Outcome::kQuotaExceeded: return "quota_exceeded";
    case Outcome::kStaleToken: return "stale_token";
    case Outcome::kNotFound: return "not_found";
    case Outcome::kForbidden: return "forbidden";
    case Outcome::kSessionEnded: return "session_ended";
    case Outcome::kConflict: return "conflict";
    case Outcome::kOverloaded: return "overloaded";
    case Outcome::kError: return "error";
  }
  return "error";
}

const char* ReportedStateName(ReportedState state) {
  switch (state) {
    case ReportedState::kReady: return "ready";
    case ReportedState::kDraining: return "draining";
    case ReportedState::kDead: return "dead";
    case ReportedState::kNone: break;
  }
  return nullptr;
}

Outcome OutcomeOfError(const Status& s) {
  return s.IsBusy() ? Outcome::kOverloaded : Outcome::kError;
}

}  // namespace store
