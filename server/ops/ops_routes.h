#ifndef EDGEALLOC_SERVER_OPS_OPS_ROUTES_H_
#define EDGEALLOC_SERVER_OPS_OPS_ROUTES_H_

#include <cstdint>

#include "kvmirror/mirror.h"
#include "kvmirror/warm_buffer.h"
#include "server/ops/metrics.h"
#include "server/http/router.h"

namespace server {

// The read-only operational routes (docs/api.md "Capacity and operations"):
//   GET /v1/capacity          (tenant, admin or metrics) the mirror's snapshot, never SQLite;
//   GET /v1/capacity/history  (tenant, admin or metrics) the mirror's utilisation history;
//   GET /v1/capacity/deaths   (tenant, admin or metrics) the reaper's deaths of the
//                             last ten minutes by pool (batcher::RecentDeaths);
//   GET /v1/pressure          (tenant, admin or metrics) one pool's counts from the
//                             mirror's snapshot, its waiting claims, claim rates,
//                             heartbeat lag and recommended_buffer;
//   GET /v1/capacity/claims   (tenant, admin or metrics) every node's claim counts
//                             summed, as the allocator last read them
//                             (allocator::FleetClaims);
//   GET /metrics              (no key, or a metrics or admin key once the keys
//                             file has a metrics key) Prometheus text format 0.0.4;
//   GET /dashboard            (no key) the embedded page;
//   GET /openapi.json         (no key) the embedded API document.
// None of them touches the database or waits for a writer: capacity and the
// container gauges load the mirror's current snapshot, the fleet's claims
// the allocator's latest read, the rest are atomics.
// Safe from every io thread. The mirror and everything `metrics` points to
// must outlive it.
class OpsRoutes {
 public:
  // `warm_buffers`: each pool's buffer, for /v1/pressure's recommended_buffer.
  OpsRoutes(const kvmirror::Mirror* mirror, MetricsSources metrics,
            kvmirror::WarmBuffers warm_buffers = {});

  // Adds the routes above to `router`.
  void AddRoutes(Router* router);

  // The Cache-Control max-age of /v1/capacity for a mirror refreshed every
  // `refresh_ms`: the period in whole seconds, rounded up, at least 1.
  static int64_t CapacityMaxAgeSeconds(int64_t refresh_ms);

 private:
  // The /v1/capacity routes (capacity, history, deaths, claims).
  void AddCapacityRoutes(Router* router);
  // GET /v1/pressure?region=R&pool=P.
  Response Pressure(const RouteRequest& req) const;

  const kvmirror::Mirror* mirror_;
  MetricsSources metrics_;
  const kvmirror::WarmBuffers warm_buffers_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_OPS_ROUTES_H_
