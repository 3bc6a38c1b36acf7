#ifndef EDGEALLOC_SERVER_API_REQUEST_BODIES_H_
#define EDGEALLOC_SERVER_API_REQUEST_BODIES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/types.h"
#include "batcher/heartbeat.h"

namespace server {

// Bounds of docs/api.md on request fields.
inline constexpr size_t kMaxNameChars = 256;        // ids, regions, pools, idempotency keys
inline constexpr size_t kMaxFallbackRegions = 16;
inline constexpr int kMaxJsonDepth = 64;            // deeper bodies are invalid_json
inline constexpr size_t kMaxLabels = 16;            // a claim's labels
inline constexpr size_t kMaxLabelKeyChars = 64;
inline constexpr size_t kMaxLabelValueChars = 256;
// A claim's selector: at most kMaxLabels keys, and this many values in all.
inline constexpr size_t kMaxSelectorValues = 64;

// The most bytes a valid claim or renew body can be, computed from the
// field limits above: every field present at its limit, every character
// at its longest in JSON, laid out as a pretty printer would. A body over
// it is 413 body_too_large before it is read or parsed.
namespace body_bound {
// A character at its longest: one beyond the BMP as two \uXXXX escapes.
inline constexpr size_t kCharBytes = 12;
// A member name's character at its longest: a \uXXXX escape (names are ASCII).
inline constexpr size_t kNameCharBytes = 6;
// An integer at its longest: "-9223372036854775808".
inline constexpr size_t kIntegerBytes = 20;
// The whitespace a pretty printer lays around one member or element: a CRLF,
// an indent of two levels of four spaces, a space after the ':'.
inline constexpr size_t kLayoutBytes = 2 + 2 * 4 + 1;

constexpr size_t String(size_t chars) { return 2 + kCharBytes * chars; }
// A member of an object: its quoted name, ':', its value, ',' and layout.
constexpr size_t Member(std::string_view name, size_t value_bytes) {
  return 2 + kNameCharBytes * name.size() + 1 + value_bytes + 1 + kLayoutBytes;
}
// An array or object of `n` items of `item_bytes` each, with ',' and layout.
constexpr size_t List(size_t n, size_t item_bytes) {
  return 2 + kLayoutBytes + n * (item_bytes + 1 + kLayoutBytes);
}
}  // namespace body_bound

inline constexpr size_t kMaxClaimBodyBytes =
    body_bound::List(0, 0) + body_bound::Member("region", body_bound::String(kMaxNameChars)) +
    body_bound::Member("pool", body_bound::String(kMaxNameChars)) +
    body_bound::Member("lease_ms", body_bound::kIntegerBytes) +
    body_bound::Member("idempotency_key", body_bound::String(kMaxNameChars)) +
    body_bound::Member("fallback_regions",
                       body_bound::List(kMaxFallbackRegions, body_bound::String(kMaxNameChars))) +
    body_bound::Member("wait_ms", body_bound::kIntegerBytes) +
    body_bound::Member("placement", body_bound::String(11)) +
    body_bound::Member("labels", body_bound::List(kMaxLabels,
                                                  body_bound::String(kMaxLabelKeyChars) + 1 +
                                                      body_bound::String(kMaxLabelValueChars))) +
    // Every key an array (its empty shell in the list), every value in one.
    body_bound::Member("selector",
                       body_bound::List(kMaxLabels, body_bound::String(kMaxLabelKeyChars) + 1 +
                                                        body_bound::List(0, 0)) +
                           kMaxSelectorValues * (body_bound::String(kMaxLabelValueChars) + 1 +
                                                 body_bound::kLayoutBytes));

inline constexpr size_t kMaxRenewBodyBytes =
    body_bound::List(0, 0) + body_bound::Member("token", body_bound::kIntegerBytes) +
    body_bound::Member("lease_ms", body_bound::kIntegerBytes) +
    body_bound::Member("shorten", 5);  // false

// Heartbeats one request may carry: well below a shard's default queue
// capacity, so that a single request cannot fill a queue alone.
inline constexpr size_t kMaxHeartbeatsPerRequest = 10000;

// How far ahead of the server's clock (on PostgreSQL, the database's) a
// ts_ms may be (--max-clock-skew-ms).
// Unbounded, one report dated in the far future would make every later one
// "older" and so freeze the container's state.
inline constexpr int64_t kDefaultMaxClockSkewMs = 60000;

// Why a body was refused: code is invalid_json, invalid_field or
// invalid_request (error_table.h CodeOf), the message names the field (with
// its index in arrays).
struct BodyError {
  std::string code;
  std::string message;
};

// The fields each request body, and each object of fixed shape in one, may
// hold; any other is refused 400 invalid_request naming it (json_body.h), so
// that a mistyped field, or one only a newer server knows, is told rather
// than ignored. Free-form maps (a claim's labels, a container's data) are a
// known field's value and not looked into. docs/openapi.json's request
// schemas list the same (request_bodies_test holds them to it).
using FieldNames = std::span<const std::string_view>;
inline constexpr std::string_view kClaimFields[] = {
    "region",  "pool",   "lease_ms",  "idempotency_key", "fallback_regions",
    "wait_ms", "labels", "placement", "selector"};
inline constexpr std::string_view kRenewFields[] = {"token", "lease_ms", "shorten"};
inline constexpr std::string_view kRegistrationFields[] = {"containers"};
inline constexpr std::string_view kContainerSpecFields[] = {
    "id", "region", "pool", "latency_ms", "data", "slots", "attributes"};
inline constexpr std::string_view kHeartbeatsFields[] = {"heartbeats"};
inline constexpr std::string_view kHeartbeatFields[] = {"container_id", "ts_ms", "load", "state"};

// Every request body of the API is read here. Each Parse* reads one, checks
// it as docs/api.md says and fills *out. Pure functions of their arguments, so
// safe from any thread and fuzzed (fuzz/).
// Returns true on success, else false with *error set; *out is then partly
// filled and must not be used.

// POST /v1/sessions. The caller is not set here. `labels`, an object of at
// most kMaxLabels string values, becomes out->labels as compact JSON with its
// keys sorted (empty when there are none). `selector` becomes out->selector
// (tag_bodies.h ParseSelector).
bool ParseClaim(std::string_view body, int64_t max_lease_ms, store::ClaimRequest* out,
                BodyError* error);

// POST /v1/sessions/{id}/renew: token required, lease_ms optional (0: default),
// shorten optional (a boolean; false: a renew never ends a lease sooner).
bool ParseRenew(std::string_view body, int64_t max_lease_ms, int64_t* token, int64_t* lease_ms,
                bool* shorten, BodyError* error);
inline bool ParseRenew(std::string_view body, int64_t max_lease_ms, int64_t* token,
                       int64_t* lease_ms, BodyError* error) {
  bool shorten = false;
  return ParseRenew(body, max_lease_ms, token, lease_ms, &shorten, error);
}

// POST /v1/containers (and `edgealloc register`). A container's
// `attributes`, checked as a claim's labels, become spec.attributes as
// compact JSON, keys sorted; absent or null leaves it unset (the stored
// ones are kept).
bool ParseRegistration(std::string_view body, std::vector<store::ContainerSpec>* out,
                       BodyError* error);

// Reads a POST /v1/heartbeats body (docs/api.md "Heartbeats") and checks it whole:
//   {"heartbeats": [{"container_id": "c-1", "ts_ms": 1790000000000,
//                    "load": 0.4, "state": "ready"}]}
// container_id: string of 1 to 256 characters, required; ts_ms: integer >= 0
// and at most `accepted_ms` + `engine_offset_ms` + `max_clock_skew_ms` (the
// engine's clock, store::EngineClockOffsetMs: the database's on PostgreSQL,
// whose nodes' clocks may be off; `accepted_ms` is this node's); load: a number; state:
// "ready", "draining" or "dead"; null is the same as absent; another field
// is invalid_request. `heartbeats` must be an array of 1 to
// kMaxHeartbeatsPerRequest objects. On success, fills *out with one Heartbeat
// an item, in order, each with accepted_ms = `accepted_ms`, and returns true.
// *items_sent, when given, is the items the body's array held, set as soon
// as the array is seen (before an item is checked), refused or not.
// Otherwise returns false with *error: invalid_json if the body is not a JSON
// object, else invalid_field naming the first bad field, for an item with its
// index ("heartbeats[3].ts_ms: ...") (invalid_request an unknown field, after
// *items_sent is set); *out must not be used then.
bool ParseHeartbeats(std::string_view body, int64_t accepted_ms,
                     std::vector<batcher::Heartbeat>* out, BodyError* error,
                     int64_t max_clock_skew_ms = kDefaultMaxClockSkewMs,
                     int64_t engine_offset_ms = 0, size_t* items_sent = nullptr);

// The body of a request that takes none: drain, undrain, and DELETE of a
// session or a container. Empty (or only whitespace) or an object without
// members is fine; another JSON object is invalid_request naming its first
// field, anything else invalid_json.
bool ParseNoBody(std::string_view body, BodyError* error);

// True if `s` holds U+0000. PostgreSQL text cannot hold it and libpq would
// cut a parameter at it, so every Parse* refuses it (invalid_field) in any
// string bound for the database, on both engines, as the routes do in query
// parameters.
bool HasNul(std::string_view s);
// What a refusal for HasNul says after the field's name.
inline constexpr char kNoNul[] = "must not contain U+0000 (NUL)";

// The characters (code points) of UTF-8 text: the unit of docs/api.md's 1 to 256.
size_t Utf8Chars(std::string_view s);

// Parses a decimal int64 such as the `token` query parameter. False if not one.
bool ParseInt64(std::string_view text, int64_t* out);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_REQUEST_BODIES_H_
