#ifndef EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_DELIVERER_H_
#define EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_DELIVERER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "server/http/auth.h"
#include "server/webhooks/webhook_post.h"
#include "server/webhooks/webhook_stats.h"
#include "store/storage.h"

// Webhooks (docs/api.md, "Webhooks"): each tenant of the keys file that
// names a webhook has its events (those GET /v1/events gives it) POSTed in
// order, in batches, signed as Standard Webhooks says, at least once. The
// cursor after the last batch the receiver answered 2xx is kept in the
// database with a lease (Storage::LeaseWebhook), so one node a tenant
// delivers, a restart resumes after it, and another node takes over once a
// dead node's lease lapses. Each tenant has a thread of its own that holds
// at most one batch: a receiver down or slow delays only its own tenant's
// deliveries, never a claim (the claim path never waits for a delivery).

namespace server {

struct WebhookDelivererOptions {
  std::string node_id;  // the lease's owner
  // The tenants to deliver and where, read about once a second (a keys
  // file reload starts and stops deliveries).
  std::function<std::map<std::string, WebhookTarget>()> targets;
  int batch_size = 100;       // events a POST at most
  int64_t lease_ms = 30000;   // a dead node's tenants move after this
  int64_t backoff_first_ms = 250;  // after a failed POST, doubling ...
  int64_t backoff_cap_ms = 30000;  // ... up to this
  WebhookPostOptions post{3000, 10000, 64 * 1024};
  std::function<void(const std::string&)> warn;
};

class WebhookDeliverer {
 public:
  WebhookDeliverer(store::Storage* storage, WebhookDelivererOptions options);
  ~WebhookDeliverer();
  WebhookDeliverer(const WebhookDeliverer&) = delete;
  WebhookDeliverer& operator=(const WebhookDeliverer&) = delete;

  void Start();
  // Stops every delivery (a POST in flight is cut within 100 ms); the
  // cursor stays after the last batch acknowledged.
  void Stop();
  WebhookStats& stats() { return stats_; }

 private:
  struct Worker;
  struct Delivery;
  void Supervise();
  void Reconcile();
  void Deliver(Worker* w);
  bool KeepLease(Worker* w, Delivery* d);
  bool SendBatch(Worker* w, Delivery* d, const store::EventPage& page);
  void Sleep(Worker* w, int64_t ms);
  void Warn(const std::string& message);

  store::Storage* storage_;
  WebhookDelivererOptions options_;
  WebhookStats stats_;
  std::thread supervisor_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<Worker>> workers_;  // guarded by mu_ for lag_ms
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_DELIVERER_H_
