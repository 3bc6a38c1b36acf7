#ifndef EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_
#define EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_

#include <atomic>
#include <cstdint>

#include "batcher/batcher.h"
#include "server/api/request_bodies.h"
#include "server/http/router.h"

namespace server {

// HeartbeatRoutes is the HTTP face of the batcher: POST /v1/heartbeats (roles
// admin and container). It validates, hands the request to the Batcher and
// answers 202 {"accepted": N} before anything is written; 400 for a body
// ParseHeartbeats refuses; 403 forbidden, nothing taken, if a container key
// scoped to some ids (auth.h) names any other id; 503 overloaded
// (Retry-After) if a queue is full, 503 unavailable while the server is not
// ready (starting or stopping). Safe from every io thread: it only reads the
// flag and calls Batcher::Submit. The batcher and `ready` must outlive it.
class HeartbeatRoutes {
 public:
  HeartbeatRoutes(batcher::Batcher* batcher, const std::atomic<bool>* ready,
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
