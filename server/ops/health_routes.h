#ifndef EDGEALLOC_SERVER_OPS_HEALTH_ROUTES_H_
#define EDGEALLOC_SERVER_OPS_HEALTH_ROUTES_H_

#include <atomic>

#include "server/http/router.h"

namespace server {

// The probes of a load balancer or orchestrator (no key needed):
//   GET /healthz  200 {"status":"ok"} while the process serves at all;
//   GET /readyz   200 {"status":"ready"} while `ready` is set, else 503
//                 not_ready (starting or stopping).
// Safe from every io thread: it only reads the flag, which must outlive it.
class HealthRoutes {
 public:
  explicit HealthRoutes(const std::atomic<bool>* ready) : ready_(ready) {}

  // Adds the two routes to `router`.
  void AddRoutes(Router* router);

 private:
  const std::atomic<bool>* ready_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_HEALTH_ROUTES_H_
