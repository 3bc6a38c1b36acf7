#ifndef EDGEALLOC_SERVER_API_ERRORS_H_
#define EDGEALLOC_SERVER_API_ERRORS_H_

#include <chrono>
#include <string>
#include <string_view>

#include "batcher/batcher.h"
#include "store/types.h"
#include "server/api/refusals.h"
#include "server/api/request_bodies.h"
#include "server/http/message.h"

namespace server {

// The API's error responses, from the one table of server/http/error_table.h: an
// allocator Outcome, a refused body or a route's refusal to the HTTP status
// and the JSON error body. Pure functions, safe from any thread;
// OutcomeResponse also logs a storage failure.

// The error of an allocator or storage Outcome that is not a success
// (kOk and kReplayed have none). kError (storage failed, e.g. the write
// lock of another process held too long) is 503 `unavailable` with
// Retry-After: a client may retry it.
ApiError ErrorOf(store::Outcome outcome);

// An HTTP status and the docs/api.md error code that goes with it.
struct HttpStatus {
  int status;
  const char* code;  // empty for a success
};

// An allocator Outcome's HTTP status and error code: its ErrorOf row of the
// table. kOk and kReplayed map to 200 with an empty code; each route picks
// its own success status.
HttpStatus HttpStatusOf(store::Outcome outcome);

// The error response of a refusal whose message is fixed.
Response RefusalResponse(const Refusal& refusal);

// Why the batcher did not take a heartbeat request (any Code but kAccepted):
// nothing of it was taken, so each is a 503 that the agent retries.
const Refusal& SubmitRefusal(batcher::SubmitResult::Code code);

// The error response for an allocator outcome that is not a success:
// HttpStatusOf's status and code, `message` (or the code if it is empty).
// For kError and kOverloaded, whose message is storage text (libpq's may
// name the database's host and port), the client gets a plain message with
// `request_id` instead, and `message` is logged under that id (kOverloaded:
// at most once every kRefusalLogPeriod, see below).
Response OutcomeResponse(store::Outcome outcome, const std::string& message,
                         std::string_view request_id);
// A refused storage write (kOverloaded) is logged at most once every
// kRefusalLogPeriod, with the count of those not logged since.
inline constexpr std::chrono::seconds kRefusalLogPeriod{10};

// 503 overloaded for a waiting claim past a bound (store::SessionResult's
// waiter_bound): `message` is the allocator's, naming the bound and only the
// caller's own tenant and pool. Logged at most once every kRefusalLogPeriod,
// with the count of those not logged since.
Response WaiterBoundResponse(const std::string& message, std::string_view request_id);

// OutcomeResponse of a failed storage read's Status (store::OutcomeOfError).
Response StatusResponse(const store::Status& status, std::string_view request_id);

// 400 invalid_field for a query parameter holding U+0000 (request_bodies.h
// HasNul), naming it.
Response NulParamResponse(std::string_view name);
// 400 invalid_field for a name parameter (region, pool) longer than
// kMaxNameChars, naming it.
Response LongParamResponse(std::string_view name);

// 429 rate_limited: `tenant` is past its claims_per_s (`rate`) on this node;
// Retry-After is `retry_after_s` (whole seconds, at least 1). Not an
// allocator Outcome: claims are limited before they reach the allocator.
Response RateLimitedResponse(const std::string& tenant, double rate, int64_t retry_after_s);

// The response of a refused request body: its code's row of the table (400)
// and its message.
Response BodyErrorResponse(const BodyError& error);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_ERRORS_H_
