#ifndef EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_STATS_H_
#define EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_STATS_H_

#include <atomic>
#include <cstdint>
#include <functional>

namespace server {

// What /metrics shows of webhook delivery (edgealloc_webhook_*): batches
// POSTed by this node by result, and how far behind its deliveries are.
struct WebhookStats {
  std::atomic<uint64_t> delivered{0};   // answered 2xx: the cursor moved past the batch
  std::atomic<uint64_t> rejected{0};    // answered, not 2xx: retried
  std::atomic<uint64_t> unanswered{0};  // no answer (connect, TLS, timeout): retried
  // Times a tenant's next events had been pruned (--event-retention-ms)
  // before they were delivered: delivery went on from the oldest kept.
  std::atomic<uint64_t> gaps{0};
  // The age in ms of the oldest event not yet delivered among the tenants
  // this node delivers (0 when all are delivered). Set by the deliverer.
  std::function<int64_t()> lag_ms;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_STATS_H_
