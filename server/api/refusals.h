#ifndef EDGEALLOC_SERVER_API_REFUSALS_H_
#define EDGEALLOC_SERVER_API_REFUSALS_H_

#include "server/http/error_table.h"

namespace server {

// The API's refusals whose words are fixed: each a row of the error table
// (server/http/error_table.h) and its message. RefusalResponse (errors.h)
// answers one.

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
inline constexpr Refusal kReaderShareFull{
    ApiError::kOverloaded,
    "too many of your reads are waiting for the database on this node (your share of its "
    "reader queue); retry after a second"};
inline constexpr Refusal kOwnLimitsOnly{ApiError::kForbidden,
                                        "a tenant key reads its own limits only"};
inline constexpr Refusal kOwnSessionsOnly{ApiError::kForbidden,
                                          "a tenant key lists its own sessions only"};
inline constexpr Refusal kOneLabelOnly{ApiError::kInvalidField,
                                       "label: give at most one label=KEY:VALUE"};
inline constexpr Refusal kOneAttributeOnly{ApiError::kInvalidField,
                                           "attribute: give at most one attribute=KEY:VALUE"};
inline constexpr Refusal kUnknownContainerStatus{
    ApiError::kInvalidField, "status: must be available, picked, draining or dead"};
inline constexpr Refusal kUnknownSessionState{ApiError::kInvalidField,
                                              "state: must be live or ended"};
inline constexpr Refusal kTokenRequired{
    ApiError::kInvalidField, "token: is required, as ?token=N (the session's fencing token)"};
inline constexpr Refusal kTokenNotInteger{ApiError::kInvalidField, "token: must be an integer"};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_REFUSALS_H_
