#ifndef EDGEALLOC_SERVER_OPS_METRICS_H_
#define EDGEALLOC_SERVER_OPS_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "allocator/allocator.h"
#include "base/histogram.h"
#include "batcher/batcher.h"
#include "kvmirror/mirror.h"
#include "server/http/request_metrics.h"
#include "server/http/server.h"
#include "server/webhooks/webhook_stats.h"
#include "store/storage.h"

namespace server {

// What /metrics reads. Every pointer must outlive the scrapes; a null one
// leaves its families out (the tests render parts alone).
struct MetricsSources {
  const allocator::AllocatorStats* allocator = nullptr;
  // Per-pool claim counts (edgealloc_pool_claims_total); a short lock of its
  // own. Also the fleet's claim counts (GET /v1/capacity/claims).
  const allocator::Allocator* pool_claims = nullptr;
  const base::LatencyHistogram* claim_latency = nullptr;
  const batcher::Batcher* batcher = nullptr;
  // Heartbeat requests refused by their key's budget or scope, and items
  // folded at parse (edgealloc_heartbeat_key_refusals_total, ...): the
  // counters of the routes' budget (server/api/heartbeat_budget.h, which
  // ops/ does not include). Null: left out.
  struct HeartbeatKeyCounters {
    const std::atomic<uint64_t>* refused_budget = nullptr;
    const std::atomic<uint64_t>* refused_items = nullptr;
    const std::atomic<uint64_t>* folded = nullptr;
  } heartbeat_keys;
  // The API's reads the reader pool refused 503 overloaded: its queue full,
  // or the share of it one tenant's reads (or one key's heartbeats) may fill
  // (edgealloc_reads_refused_total; server/api/reader_pool.h, which ops/
  // does not include). Null: left out.
  struct ReadRefusals {
    const std::atomic<uint64_t>* full = nullptr;
    const std::atomic<uint64_t>* owner_share = nullptr;
  } reads_refused;
  const kvmirror::Mirror* mirror = nullptr;
  const store::Storage* storage = nullptr;  // its writers' counters
  const RequestMetrics* requests = nullptr;
  // Its requests answered at their deadline (edgealloc_http_request_deadlines_total).
  const HttpServer* http = nullptr;
  // Per-tenant series (edgealloc_tenant_*), one a tenant the keys file
  // names, never a name a client sent; called at each scrape. Empty: none.
  struct TenantSample {
    std::string tenant;
    uint64_t claims_rate_limited = 0;  // claims refused 429 rate_limited
    int64_t claims_waiting = 0;        // its claims waiting now (wait_ms)
    // Other live nodes on the database apply other limits to it
    // (server/tenant_limits_watch.h).
    bool limits_mismatch = false;
  };
  std::function<std::vector<TenantSample>()> tenants;
  // Reloads of the keys file (SIGHUP): those that took, and those that kept
  // the keys in use (edgealloc_keys_reloads_total). Null: left out.
  struct KeysReloads {
    std::atomic<uint64_t> ok{0}, failed{0};
  };
  const KeysReloads* keys_reloads = nullptr;
  // Webhook deliveries (edgealloc_webhook_*). Null: left out.
  const WebhookStats* webhooks = nullptr;
  // edgealloc_build_info's labels; the family is left out while version is empty.
  struct BuildInfo {
    std::string version, commit, sqlite_version, libpq_version;
  } build_info;
};

// The body of GET /metrics at `now_ms`: every family with # HELP and # TYPE,
// counters from the allocator, batcher, mirror and store writers, the claim
// latency and heartbeat histograms, and the container gauges from the
// mirror's current snapshot. Reads atomics and the mirror's snapshot only:
// never SQLite, never a lock that a writer holds (the per-pool claim
// counts' lock is held for a map copy). The storage's families are written
// by store_metrics.h, the keys file's by tenant_metrics.h.
std::string RenderMetrics(const MetricsSources& sources, int64_t now_ms);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_METRICS_H_
