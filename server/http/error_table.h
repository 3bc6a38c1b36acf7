#ifndef EDGEALLOC_SERVER_HTTP_ERROR_TABLE_H_
#define EDGEALLOC_SERVER_HTTP_ERROR_TABLE_H_

#include <string_view>

namespace server {

// The one table of the API's errors: each error's HTTP status and code, as
// docs/api.md's error table and docs/openapi.json list them
// (tests/server/api/errors_test.cc holds the three to each other). Every
// error response is made from a row of it, by ErrorResponse (message.h):
// the connection's and the router's here in server/http, /readyz's in
// server/ops, and the routes' in server/api (errors.h maps the storage's
// outcomes onto rows). No call site writes a status or a code of its own.
// Plain data, safe from any thread.
enum class ApiError {
  kBadRequest,
  kInvalidJson,
  kInvalidField,
  kInvalidRequest,
  kUnauthorized,
  kForbidden,
  kHostNotAllowed,
  kCrossOrigin,
  kNotFound,
  kUnknownPool,
  kNoMatch,
  kMethodNotAllowed,
  kStaleToken,
  kConflict,
  kSessionEnded,
  kEventsExpired,
  kBodyTooLarge,
  kUnsupportedMediaType,
  kQuotaExceeded,
  kRateLimited,
  kHeadersTooLarge,
  kInternal,
  kNotImplemented,
  kNoCapacity,
  kOverloaded,
  kUnavailable,
  kNotReady,
};

struct ErrorRow {
  ApiError error;
  int status;
  const char* code;
};

// In ApiError's order (RowOf indexes it; error_table.cc checks the order).
inline constexpr ErrorRow kErrorTable[] = {
    {ApiError::kBadRequest, 400, "bad_request"},
    {ApiError::kInvalidJson, 400, "invalid_json"},
    {ApiError::kInvalidField, 400, "invalid_field"},
    {ApiError::kInvalidRequest, 400, "invalid_request"},
    {ApiError::kUnauthorized, 401, "unauthorized"},
    {ApiError::kForbidden, 403, "forbidden"},
    {ApiError::kHostNotAllowed, 403, "host_not_allowed"},
    {ApiError::kCrossOrigin, 403, "cross_origin"},
    {ApiError::kNotFound, 404, "not_found"},
    {ApiError::kUnknownPool, 404, "unknown_pool"},
    {ApiError::kNoMatch, 404, "no_match"},
    {ApiError::kMethodNotAllowed, 405, "method_not_allowed"},
    {ApiError::kStaleToken, 409, "stale_token"},
    {ApiError::kConflict, 409, "conflict"},
    {ApiError::kSessionEnded, 410, "session_ended"},
    {ApiError::kEventsExpired, 410, "events_expired"},
    {ApiError::kBodyTooLarge, 413, "body_too_large"},
    {ApiError::kUnsupportedMediaType, 415, "unsupported_media_type"},
    {ApiError::kQuotaExceeded, 429, "quota_exceeded"},
    {ApiError::kRateLimited, 429, "rate_limited"},
    {ApiError::kHeadersTooLarge, 431, "headers_too_large"},
    {ApiError::kInternal, 500, "internal"},
    {ApiError::kNotImplemented, 501, "not_implemented"},
    {ApiError::kNoCapacity, 503, "no_capacity"},
    {ApiError::kOverloaded, 503, "overloaded"},
    {ApiError::kUnavailable, 503, "unavailable"},
    {ApiError::kNotReady, 503, "not_ready"},
};

constexpr const ErrorRow& RowOf(ApiError error) {
  return kErrorTable[static_cast<int>(error)];
}
constexpr int StatusOf(ApiError error) { return RowOf(error).status; }
constexpr const char* CodeOf(ApiError error) { return RowOf(error).code; }

// The row of an error code, or nullptr for a code not in the table.
const ErrorRow* RowOfCode(std::string_view code);

// A refusal whose message is fixed: its error and its words for people.
struct Refusal {
  ApiError error;
  const char* message;
};

// The answer to a handler that threw: the server/http connection and the
// API's reader and writer hand-offs word it alike.
inline constexpr Refusal kInternalError{ApiError::kInternal, "internal error; it has been logged"};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_ERROR_TABLE_H_
