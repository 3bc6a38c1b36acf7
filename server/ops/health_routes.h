#ifndef EDGEALLOC_SERVER_OPS_HEALTH_ROUTES_H_
#define EDGEALLOC_SERVER_OPS_HEALTH_ROUTES_H_

#include <atomic>

#include "batcher/batcher.h"
#include "server/http/router.h"
#include "store/storage.h"

namespace server {

// The probes of a load balancer or orchestrator (no key needed):
//   GET /healthz  200 {"status":"ok"} while the process serves at all;
//   GET /readyz   200 {"status":"ready"} while `ready` is set and no writer
//                 of `storage` is failing (WriterStats::failing), else 503
//                 not_ready: starting or stopping, or the store cannot be
//                 written (a node cut off from its database takes itself
//                 out of the load balancer), or a heartbeat lane of
//                 `batcher` fails its writes (Batcher::AnyLaneFailing).
// Safe from every io thread: it only reads the flag and the writers' atomic
// counters (never the database), all of which must outlive it. `storage`
// and `batcher` may be null (no such check).
class HealthRoutes {
 public:
  explicit HealthRoutes(const std::atomic<bool>* ready, const store::Storage* storage = nullptr,
                        const batcher::Batcher* batcher = nullptr)
      : ready_(ready), storage_(storage), batcher_(batcher) {}

  // Adds the two routes to `router`.
  void AddRoutes(Router* router);

 private:
  const std::atomic<bool>* ready_;
  const store::Storage* storage_;
  const batcher::Batcher* batcher_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_HEALTH_ROUTES_H_
