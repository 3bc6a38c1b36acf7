#ifndef EDGEALLOC_SERVER_API_SESSION_ROUTES_H_
#define EDGEALLOC_SERVER_API_SESSION_ROUTES_H_

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstdint>

#include "allocator/allocator.h"
#include "allocator/registry.h"
#include "base/histogram.h"
#include "server/http/router.h"

namespace server {

struct ApiOptions {
  int64_t max_lease_ms = 3600000;
  // Where POST /v1/sessions records how long each claim took, from the parsed
  // request to its reply being ready (edgealloc_claim_duration_seconds).
  // Claims refused before the allocator (400) are not observed. May be null;
  // must outlive the Api.
  base::LatencyHistogram* claim_latency = nullptr;
};

// The Api is the HTTP face of the allocator and the registry: the routes of
// API.md for containers and sessions, /healthz and /readyz. Safe from every
// io thread. Results that come back on a store writer thread are posted to
// `io` before any JSON is made, so writer threads only hand results on. The
// allocator, registry and `ready` flag must outlive it.
class Api {
 public:
  Api(allocator::Allocator* allocator, allocator::Registry* registry,
      boost::asio::any_io_executor io, ApiOptions options, const std::atomic<bool>* ready);

  // Adds this Api's routes to `router`.
  void AddRoutes(Router* router);

 private:
  void Claim(RouteRequest req, Reply reply);
  void GetSession(RouteRequest req, Reply reply);
  void Renew(RouteRequest req, Reply reply);
  void Release(RouteRequest req, Reply reply);
  void Register(RouteRequest req, Reply reply);
  void GetContainer(RouteRequest req, Reply reply);
  void Drain(RouteRequest req, Reply reply);
  void Remove(RouteRequest req, Reply reply);

  allocator::Allocator* allocator_;
  allocator::Registry* registry_;
  boost::asio::any_io_executor io_;
  ApiOptions options_;
  const std::atomic<bool>* ready_;
};

// The error response for an allocator outcome that is not a success.
Response OutcomeResponse(allocator::Outcome outcome, const std::string& message);

// The caller the allocator sees for an authenticated principal.
allocator::Caller CallerOf(const Principal& who);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_SESSION_ROUTES_H_
