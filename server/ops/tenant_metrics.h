#ifndef EDGEALLOC_SERVER_OPS_TENANT_METRICS_H_
#define EDGEALLOC_SERVER_OPS_TENANT_METRICS_H_

#include "server/ops/exposition.h"
#include "server/ops/metrics.h"

namespace server {

// The families of RenderMetrics that come from the keys file: its tenants'
// (edgealloc_tenant_*) and its reloads (edgealloc_keys_reloads_total).
void KeysFileFamilies(const MetricsSources& src, Exposition* out);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_TENANT_METRICS_H_
