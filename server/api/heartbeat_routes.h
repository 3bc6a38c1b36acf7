#ifndef EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_
#define EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "batcher/batcher.h"
#include "batcher/heartbeat.h"
#include "server/api/request_bodies.h"
#include "server/http/router.h"

namespace server {

// Heartbeats one request may carry. The body limit (1 MiB by default) would
// allow some 40,000 of the smallest; this bound keeps one request well below
// a shard's default queue capacity, so a single client cannot fill it alone.
inline constexpr size_t kMaxHeartbeatsPerRequest = 10000;

// How far ahead of the server's clock a ts_ms may be (--max-clock-skew-ms).
// Unbounded, one report dated in the far future would make every later one
// "older" and so freeze the container's state.
inline constexpr int64_t kDefaultMaxClockSkewMs = 60000;

// Reads a POST /v1/heartbeats body (API.md "Heartbeats") and checks it whole:
//   {"heartbeats": [{"container_id": "c-1", "ts_ms": 1790000000000,
//                    "load": 0.4, "state": "ready"}]}
// container_id: string of 1 to 256 characters, required; ts_ms: integer >= 0
// and at most `accepted_ms` + `max_clock_skew_ms`; load: a number; state:
// "ready", "draining" or "dead"; null is the same as absent; unknown fields
// are ignored. `heartbeats` must be an array of 1 to
// kMaxHeartbeatsPerRequest objects. On success, fills *out with one Heartbeat
// an item, in order, each with accepted_ms = `accepted_ms`, and returns true.
// Otherwise returns false with *error: invalid_json if the body is not a JSON
// object, else invalid_field naming the first bad field, for an item with its
// index ("heartbeats[3].ts_ms: ..."); *out must not be used then.
bool ParseHeartbeats(std::string_view body, int64_t accepted_ms,
                     std::vector<batcher::Heartbeat>* out, BodyError* error,
                     int64_t max_clock_skew_ms = kDefaultMaxClockSkewMs);

// HeartbeatApi is the HTTP face of the batcher: POST /v1/heartbeats (roles
// admin and container). It validates, hands the request to the Batcher and
// answers 202 {"accepted": N} before anything is written; 400 for a body
// ParseHeartbeats refuses; 403 forbidden, nothing taken, if a container key
// scoped to some ids (auth.h) names any other id; 503 overloaded
// (Retry-After) if a queue is full, 503 unavailable while the server is not
// ready (starting or stopping). Safe from every io thread: it only reads the
// flag and calls Batcher::Submit. The batcher and `ready` must outlive it.
class HeartbeatApi {
 public:
  HeartbeatApi(batcher::Batcher* batcher, const std::atomic<bool>* ready,
               int64_t max_clock_skew_ms = kDefaultMaxClockSkewMs);

  // Adds POST /v1/heartbeats to `router`.
  void AddRoutes(Router* router);

 private:
  void Post(RouteRequest req, Reply reply);

  batcher::Batcher* batcher_;
  const std::atomic<bool>* ready_;
  int64_t max_clock_skew_ms_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_
