#ifndef EDGEALLOC_SERVER_API_ERROR_TABLE_H_
#define EDGEALLOC_SERVER_API_ERROR_TABLE_H_

#include <string_view>

#include "store/types.h"

namespace server {

// The one table of the API's errors: each error's HTTP status and code, as
// docs/api.md's error table lists them (tests/server/api/errors_test.cc
// holds the two to each other, row for row). Routes name an ApiError or a
// Refusal below, never a status or a code of their own. Plain data, safe
// from any thread; it includes nothing of the server, so that the body
// parsers (request_bodies.h, list_query.h) word their refusals from it too.
//
// Some rows are answered below server/api, which may not include it
// (tests/layering_check.cmake): bad_request, unauthorized, method_not_allowed,
// body_too_large, headers_too_large, not_implemented and internal by
// server/http (the router and the connection), not_ready by server/ops
// (/readyz). They are listed so that docs/api.md is held to the whole set.
enum class ApiError {
  kBadRequest,
  kInvalidJson,
  kInvalidField,
  kUnauthorized,
  kForbidden,
  kNotFound,
  kMethodNotAllowed,
  kStaleToken,
  kConflict,
  kBodyTooLarge,
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
    {ApiError::kUnauthorized, 401, "unauthorized"},
    {ApiError::kForbidden, 403, "forbidden"},
    {ApiError::kNotFound, 404, "not_found"},
    {ApiError::kMethodNotAllowed, 405, "method_not_allowed"},
    {ApiError::kStaleToken, 409, "stale_token"},
    {ApiError::kConflict, 409, "conflict"},
    {ApiError::kBodyTooLarge, 413, "body_too_large"},
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

// The error of an allocator or storage Outcome that is not a success
// (kOk and kReplayed have none). kError (storage
// failed, e.g. the write lock of another process held too long) is 503
// `unavailable` with Retry-After, since docs/api.md allows no 5xx but 503.
ApiError ErrorOf(store::Outcome outcome);

// A refusal whose message is fixed: its error and its words for people.
struct Refusal {
  ApiError error;
  const char* message;
};

inline constexpr Refusal kServerStopping{ApiError::kUnavailable, "the server is stopping; retry"};
// Not ready: starting, or stopping before the batcher says so.
inline constexpr Refusal kServerNotReady{ApiError::kUnavailable,
                                         "the server is starting or stopping; retry"};
inline constexpr Refusal kNodeCutOff{
    ApiError::kUnavailable,
    "this node cannot reach its database; nothing of this request was taken; send it to "
    "another node"};
inline constexpr Refusal kHeartbeatQueueFull{
    ApiError::kOverloaded,
    "the heartbeat queue is full; nothing of this request was taken; retry after a second"};
inline constexpr Refusal kHeartbeatsUnreadable{
    ApiError::kUnavailable,
    "the database could not be read; nothing of this request was taken; retry"};
inline constexpr Refusal kReadersBusy{
    ApiError::kOverloaded,
    "too many reads are waiting for the database on this node; retry after a second"};
inline constexpr Refusal kInternalError{ApiError::kInternal, "internal error; it has been logged"};
inline constexpr Refusal kOwnLimitsOnly{ApiError::kForbidden,
                                        "a tenant key reads its own limits only"};
inline constexpr Refusal kOwnSessionsOnly{ApiError::kForbidden,
                                          "a tenant key lists its own sessions only"};
inline constexpr Refusal kOneLabelOnly{ApiError::kInvalidField,
                                       "label: give at most one label=KEY:VALUE"};
inline constexpr Refusal kUnknownContainerStatus{
    ApiError::kInvalidField, "status: must be available, picked, draining or dead"};
inline constexpr Refusal kTokenRequired{
    ApiError::kInvalidField, "token: is required, as ?token=N (the session's fencing token)"};
inline constexpr Refusal kTokenNotInteger{ApiError::kInvalidField, "token: must be an integer"};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_ERROR_TABLE_H_
