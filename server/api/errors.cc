#include "server/api/errors.h"

#include <algorithm>
#include <cstdio>

#include "base/log_gate.h"
#include "server/http/log.h"

namespace server {
namespace {

// " (and N more since the last such line)" when a gate held lines back.
std::string HeldBack(uint64_t held) {
  return held == 0 ? std::string()
                   : " (and " + std::to_string(held) + " more since the last such line)";
}

}  // namespace

ApiError ErrorOf(store::Outcome outcome) {
  using store::Outcome;
  switch (outcome) {
    case Outcome::kNoCapacity: return ApiError::kNoCapacity;
    case Outcome::kUnknownPool: return ApiError::kUnknownPool;
    case Outcome::kQuotaExceeded: return ApiError::kQuotaExceeded;
    case Outcome::kStaleToken: return ApiError::kStaleToken;
    case Outcome::kNotFound: return ApiError::kNotFound;
    case Outcome::kForbidden: return ApiError::kForbidden;
    case Outcome::kSessionEnded: return ApiError::kSessionEnded;
    case Outcome::kConflict: return ApiError::kConflict;
    case Outcome::kNoMatch: return ApiError::kNoMatch;
    case Outcome::kOverloaded: return ApiError::kOverloaded;
    case Outcome::kError: return ApiError::kUnavailable;
    case Outcome::kOk:
    case Outcome::kReplayed: break;  // a success: not asked (HttpStatusOf answers it)
  }
  return ApiError::kUnavailable;
}

HttpStatus HttpStatusOf(store::Outcome outcome) {
  if (outcome == store::Outcome::kOk || outcome == store::Outcome::kReplayed) return {200, ""};
  const ErrorRow& row = RowOf(ErrorOf(outcome));
  return {row.status, row.code};
}

Response RefusalResponse(const Refusal& refusal) {
  return ErrorResponse(refusal.error, refusal.message);
}

Response OutcomeResponse(store::Outcome outcome, const std::string& message,
                         std::string_view request_id) {
  const ApiError error = ErrorOf(outcome);
  // A storage failure (kError) or refusal (kOverloaded: a full write queue,
  // a lock not had in time) carries the driver's text, which may name the
  // database's host and port or a file path: that goes to the log, under
  // the id the client gets back (so its report finds this line), and the
  // client gets a plain, retryable 503.
  if (outcome == store::Outcome::kError) {
    LogError("edgealloc: storage error (request_id " + std::string(request_id) + "): " + message);
    return ErrorResponse(error,
                         "the database is unavailable; retry (request id " +
                             std::string(request_id) + ")");
  }
  if (outcome == store::Outcome::kOverloaded) {
    // Each request of a busy node would log one: one line a period.
    static base::LogGate gate(kRefusalLogPeriod);
    if (uint64_t held = 0; gate.Due(&held)) {
      LogWarn("edgealloc: storage busy (request_id " + std::string(request_id) + "): " + message +
              HeldBack(held));
    }
    return ErrorResponse(error,
                         "this node is overloaded; retry after a second (request id " +
                             std::string(request_id) + ")");
  }
  return ErrorResponse(error, message.empty() ? CodeOf(error) : message);
}

Response WaiterBoundResponse(const std::string& message, std::string_view request_id) {
  // A client can send thousands a second: one line a period, with the count.
  static base::LogGate gate(kRefusalLogPeriod);
  if (uint64_t held = 0; gate.Due(&held)) {
    LogWarn("edgealloc: a waiting claim refused 503 overloaded (request_id " +
            std::string(request_id) + "): " + message + HeldBack(held));
  }
  return ErrorResponse(ApiError::kOverloaded,
                       message + "; retry once fewer claims wait (request id " +
                           std::string(request_id) + ")");
}

const Refusal& SubmitRefusal(batcher::SubmitResult::Code code) {
  using Code = batcher::SubmitResult::Code;
  switch (code) {
    case Code::kOverloaded: return kHeartbeatQueueFull;
    case Code::kUnavailable: return kHeartbeatsUnreadable;
    case Code::kStopping:
    case Code::kAccepted: break;  // not a refusal: not asked
  }
  return kServerStopping;
}

Response NulParamResponse(std::string_view name) {
  return ErrorResponse(ApiError::kInvalidField,
                          std::string(name) + ": must not contain U+0000 (NUL)");
}

Response LongParamResponse(std::string_view name) {
  return ErrorResponse(ApiError::kInvalidField, std::string(name) + ": must be at most " +
                                                       std::to_string(kMaxNameChars) +
                                                       " characters long");
}

Response StatusResponse(const store::Status& status, std::string_view request_id) {
  return OutcomeResponse(store::OutcomeOfError(status), status.ToString(), request_id);
}

Response RateLimitedResponse(const std::string& tenant, double rate, int64_t retry_after_s) {
  char rate_text[32];
  std::snprintf(rate_text, sizeof(rate_text), "%g", rate);
  retry_after_s = std::max<int64_t>(1, retry_after_s);
  Response res = ErrorResponse(ApiError::kRateLimited,
                                  "tenant " + tenant + " is past its " + rate_text +
                                   " claims a second on this node; retry after " +
                                   std::to_string(retry_after_s) + " s");
  res.set(http::field::retry_after, std::to_string(retry_after_s));
  return res;
}

Response BodyErrorResponse(const BodyError& error) {
  // A body parser words its refusal with a code of the table (invalid_json,
  // invalid_field, invalid_request); one that is not is a bug, answered as a
  // bad request.
  const ErrorRow* row = RowOfCode(error.code);
  return ErrorResponse(row != nullptr ? row->error : ApiError::kBadRequest, error.message);
}

}  // namespace server
