#ifndef EDGEALLOC_SERVER_OPS_TENANT_METRICS_H_
#define EDGEALLOC_SERVER_OPS_TENANT_METRICS_H_

#include "server/ops/exposition.h"
#include "server/ops/metrics.h"

namespace server {

// The families of RenderMetrics that come from the keys file: its tenants'
// (edgealloc_tenant_*), its reloads (edgealloc_keys_reloads_total), its
// keys' heartbeat budgets and scopes (edgealloc_heartbeat_key_*), and the
// reads refused for a tenant's (or key's) share of the reader queue, beside
// those refused for the whole queue (edgealloc_reads_refused_total).
void KeysFileFamilies(const MetricsSources& src, Exposition* out);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_TENANT_METRICS_H_
