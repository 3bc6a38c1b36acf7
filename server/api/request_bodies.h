#ifndef EDGEALLOC_SERVER_API_REQUEST_BODIES_H_
#define EDGEALLOC_SERVER_API_REQUEST_BODIES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "allocator/types.h"

namespace server {

// Bounds of API.md on request fields.
inline constexpr size_t kMaxNameChars = 256;        // ids, regions, pools, idempotency keys
inline constexpr size_t kMaxFallbackRegions = 16;
inline constexpr int kMaxJsonDepth = 64;            // deeper bodies are invalid_json

// Why a body was refused: code is "invalid_json" or "invalid_field", the
// message names the field (with its index in arrays).
struct BodyError {
  std::string code;
  std::string message;
};

// Each Parse* reads a request body, checks it as API.md says and fills *out.
// Returns true on success, else false with *error set; *out is then partly
// filled and must not be used.

// POST /v1/sessions. The caller is not set here.
bool ParseClaim(std::string_view body, int64_t max_lease_ms, allocator::ClaimRequest* out,
                BodyError* error);

// POST /v1/sessions/{id}/renew: token required, lease_ms optional (0: default).
bool ParseRenew(std::string_view body, int64_t max_lease_ms, int64_t* token, int64_t* lease_ms,
                BodyError* error);

// POST /v1/containers (and `edgealloc register`).
bool ParseRegistration(std::string_view body, std::vector<allocator::ContainerSpec>* out,
                       BodyError* error);

// Parses `body` as one JSON object into *out: invalid_json if it nests deeper
// than kMaxJsonDepth, is not JSON or is not an object. For the route files
// that read their own bodies (heartbeat_routes.cc).
bool ParseJsonObject(std::string_view body, nlohmann::json* out, BodyError* error);

// The characters (code points) of UTF-8 text: the unit of API.md's 1 to 256.
size_t Utf8Chars(std::string_view s);

// Parses a decimal int64 such as the `token` query parameter. False if not one.
bool ParseInt64(std::string_view text, int64_t* out);

// The reply bodies. The container's `data` is JSON object text from the
// store, spliced in as it is, never re-parsed.
std::string SessionJson(const allocator::Session& session);
std::string ContainerJson(const allocator::ContainerInfo& container);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_REQUEST_BODIES_H_
