#include "store/types.h"

namespace store {

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk: return "ok";
    case Outcome::kReplayed: return "replayed";
    case Outcome::kNoCapacity: return "no_capacity";
    case Outcome::kUnknownPool: return "unknown_pool";
    case Outcome::kQuotaExceeded: return "quota_exceeded";
    case Outcome::kStaleToken: return "stale_token";
    case Outcome::kNotFound: return "not_found";
    case Outcome::kForbidden: return "forbidden";
    case Outcome::kSessionEnded: return "session_ended";
    case Outcome::kConflict: return "conflict";
    case Outcome::kNoMatch: return "no_match";
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

const char* PlacementName(Placement placement) {
  switch (placement) {
    case Placement::kPacked: return "packed";
    case Placement::kDistributed: return "distributed";
    case Placement::kDefault:
    case Placement::kFittest: break;
  }
  return "fittest";
}

bool ParsePlacement(std::string_view name, Placement* placement) {
  for (Placement p : {Placement::kFittest, Placement::kPacked, Placement::kDistributed}) {
    if (name == PlacementName(p)) {
      *placement = p;
      return true;
    }
  }
  return false;
}

Outcome OutcomeOfError(const Status& s) {
  return s.IsBusy() ? Outcome::kOverloaded : Outcome::kError;
}

}  // namespace store
