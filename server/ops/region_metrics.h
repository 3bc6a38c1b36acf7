#ifndef EDGEALLOC_SERVER_OPS_REGION_METRICS_H_
#define EDGEALLOC_SERVER_OPS_REGION_METRICS_H_

#include <string>

#include "server/ops/exposition.h"
#include "server/ops/metrics.h"

namespace server {

// The families of RenderMetrics about regions and their backups: each
// region's heartbeat lag (edgealloc_heartbeat_lag_seconds{region}, the
// regions the mirror knows and those the backups name), the claims by the
// region that served them (edgealloc_claims_served_total{served_by}), and
// whether a region is on its backup (edgealloc_region_on_backup,
// edgealloc_region_backup_switches_total).
void RegionFamilies(const MetricsSources& src, Exposition* out);

// GET /v1/capacity/regions: the bound, and each region's heartbeat lag,
// backup and whether it is on it now (the dashboard's "Regions" card).
std::string RegionsJson(const MetricsSources& src);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_REGION_METRICS_H_
