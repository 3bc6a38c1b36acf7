#include "server/api/errors.h"

namespace server {

HttpStatus HttpStatusOf(allocator::Outcome outcome) {
  using allocator::Outcome;
  switch (outcome) {
    case Outcome::kOk: return {200, ""};
    case Outcome::kReplayed: return {200, ""};
    case Outcome::kNoCapacity: return {503, "no_capacity"};
    case Outcome::kQuotaExceeded: return {429, "quota_exceeded"};
    case Outcome::kStaleToken: return {409, "stale_token"};
    case Outcome::kNotFound: return {404, "not_found"};
    case Outcome::kForbidden: return {403, "forbidden"};
    case Outcome::kConflict: return {409, "conflict"};
    case Outcome::kOverloaded: return {503, "overloaded"};
    case Outcome::kError: return {503, "unavailable"};
  }
  return {503, "unavailable"};
}

}  // namespace server
