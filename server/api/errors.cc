#include "server/api/errors.h"

#include <algorithm>
#include <cstdio>

#include "server/http/log.h"

namespace server {

HttpStatus HttpStatusOf(store::Outcome outcome) {
  using store::Outcome;
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

Response OutcomeResponse(store::Outcome outcome, const std::string& message,
                         std::string_view request_id) {
  HttpStatus st = HttpStatusOf(outcome);
  // A storage failure (kError) or refusal (kOverloaded: a full write queue,
  // a lock not had in time) carries the driver's text, which may name the
  // database's host and port or a file path: that goes to the log, under
  // the id the client gets back (so its report finds this line), and the
  // client gets a plain, retryable 503.
  if (outcome == store::Outcome::kError) {
    LogError("edgealloc: storage error (request_id " + std::string(request_id) + "): " + message);
    return ErrorResponse(st.status, st.code,
                         "the database is unavailable; retry (request id " +
                             std::string(request_id) + ")");
  }
  if (outcome == store::Outcome::kOverloaded) {
    LogWarn("edgealloc: storage busy (request_id " + std::string(request_id) + "): " + message);
    return ErrorResponse(st.status, st.code,
                         "this node is overloaded; retry after a second (request id " +
                             std::string(request_id) + ")");
  }
  return ErrorResponse(st.status, st.code, message.empty() ? st.code : message);
}

Response NulParamResponse(std::string_view name) {
  return ErrorResponse(400, "invalid_field",
                       std::string(name) + ": must not contain U+0000 (NUL)");
}

Response StatusResponse(const store::Status& status, std::string_view request_id) {
  return OutcomeResponse(store::OutcomeOfError(status), status.ToString(), request_id);
}

Response RateLimitedResponse(const std::string& tenant, double rate, int64_t retry_after_s) {
  char rate_text[32];
  std::snprintf(rate_text, sizeof(rate_text), "%g", rate);
  retry_after_s = std::max<int64_t>(1, retry_after_s);
  Response res = ErrorResponse(429, "rate_limited",
                               "tenant " + tenant + " is past its " + rate_text +
                                   " claims a second on this node; retry after " +
                                   std::to_string(retry_after_s) + " s");
  res.set(http::field::retry_after, std::to_string(retry_after_s));
  return res;
}

Response BodyErrorResponse(const BodyError& error) {
  return ErrorResponse(400, error.code, error.message);
}

}  // namespace server
