#ifndef EDGEALLOC_SERVER_SERVICE_H_
#define EDGEALLOC_SERVER_SERVICE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "allocator/allocator.h"
#include "base/histogram.h"
#include "batcher/batcher.h"
#include "kvmirror/mirror.h"
#include "server/api/container_routes.h"
#include "server/api/event_routes.h"
#include "server/webhooks/webhook_deliverer.h"
#include "server/api/heartbeat_routes.h"
#include "server/api/reader_pool.h"
#include "server/api/session_routes.h"
#include "server/config.h"
#include "server/demo.h"
#include "server/http/auth.h"
#include "server/http/message.h"
#include "server/http/request_metrics.h"
#include "server/http/router.h"
#include "server/http/server.h"
#include "server/io_watch.h"
#include "server/ops/health_routes.h"
#include "server/ops/metrics.h"
#include "server/ops/ops_routes.h"
#include "server/tenant_limits_watch.h"
#include "store/status.h"
#include "store/storage.h"

namespace server {

// A Service is one running edgealloc: the storage (its writers inside), the
// allocator, the heartbeat batcher, the capacity mirror, the
// routes and the HTTP server, and the demo fleet when asked: it wires
// server/http, server/api and server/ops together (each part's options from
// the config: service_options.h). main() and the tests own one. Start and Stop are for the owning thread; everything else it holds is
// used from io and writer threads.
class Service {
 public:
  // How long Stop waits for requests in flight.
  static constexpr std::chrono::milliseconds kStopGrace{10000};
  // After the writers drained, how long Stop waits for their replies to be
  // written before the io threads stop.
  static constexpr std::chrono::milliseconds kReplyGrace{5000};

  explicit Service(ServeConfig config);
  // For tests: `wrap` is given the storage once it is open and returns what
  // the service uses instead (a double whose reads block, or whose writers
  // say they are failing, around the real one).
  using StorageWrap =
      std::function<std::unique_ptr<store::Storage>(std::unique_ptr<store::Storage>)>;
  Service(ServeConfig config, StorageWrap wrap);
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;
  ~Service();

  // Loads the keys, opens (creating, migrating) the storage, starts the
  // allocator, the batcher, the mirror (after its first read, so capacity is
  // never empty), the HTTP server and the demo fleet; then /readyz says 200.
  // Returns InvalidArgument for a bad keys file, a cursor secret file too
  // short, or a database of another layout (a usage error), IOError, Busy or Corruption otherwise. On
  // failure, what was started is stopped again.
  store::Status Start();

  // Stops in order: not ready (/readyz and new heartbeats 503), stop
  // accepting, let requests in flight finish (at most `grace`), stop the
  // reader threads (a read still queued is answered 503), stop the demo,
  // drain the batcher (everything answered 202 is written), stop the
  // allocator's reaper and the mirror, drain and stop the writers, wait for
  // the replies of what they committed to be written (at most kReplyGrace),
  // stop the io threads, close the databases. Every request read is answered
  // or not committed. Idempotent.
  void Stop(std::chrono::milliseconds grace = kStopGrace);

  // Reads the keys file again (SIGHUP): if it is good, its keys and their
  // tenants' limits serve every request from now on (requests already
  // authorized finish as they were) and true; else the keys in use stay, the
  // log says why (with the line, for a malformed one) and false. Counted in
  // edgealloc_keys_reloads_total. Sessions of a tenant the file no longer
  // names are not ended. REQUIRES: Start returned Ok, Stop not called; one
  // thread at a time.
  bool ReloadKeys();

  // The bound port. REQUIRES: Start returned Ok.
  uint16_t port() const { return http_->port(); }
  const ServeConfig& config() const { return config_; }
  allocator::Allocator* allocator() { return allocator_.get(); }
  // Null before Start and after Stop.
  batcher::Batcher* batcher() { return batcher_.get(); }
  kvmirror::Mirror* mirror() { return mirror_.get(); }
  // The routes' reader threads (tests). Null before Start and after Stop.
  ReaderPool* readers() { return readers_.get(); }
  bool ready() const { return ready_.load(); }

  // Answers one request as the HTTP server does once it has read it (routes,
  // auth, handlers), without a socket: `reply` is called once, on this thread
  // or later from an io or writer thread. The fuzzer (fuzz/http_fuzz.cc) feeds
  // requests through here; such requests are not counted by Stop's WaitIdle,
  // so the caller waits for its replies before calling Stop.
  // REQUIRES: Start returned Ok and Stop has not been called.
  void Handle(Request req, Reply reply) { router_->Handle(std::move(req), std::move(reply)); }

 private:
  // The parts of Start, in its order.
  // The keys file, if given: refused if others may read it beyond loopback.
  store::Status LoadKeys();
  // The mirror, after its first read.
  store::Status StartMirror();
  // The allocator, counting claims by the pools the mirror knows.
  void StartAllocator();
  // Publishes the tenants' limits and compares them with the other nodes'.
  void StartTenantLimitsWatch();
  // Each tenant's webhook deliveries (server/webhooks/).
  void StartWebhooks();
  // The limits this node's keys file gives each tenant it names, and "" for
  // the rest, as TenantLimitsWatch publishes them.
  std::vector<store::TenantLimitsDigest> MyTenantLimits() const;
  // The router, the HTTP server that hands it every request (not listening
  // yet) and the routes' reader threads.
  void MakeHttpServer();
  // The health, session, container and heartbeat routes.
  void AddApiRoutes();
  // The capacity, metrics, dashboard and OpenAPI routes.
  void AddOpsRoutes();
  // The demo fleet, if asked for.
  store::Status StartDemo();

  ServeConfig config_;
  StorageWrap wrap_;
  std::atomic<bool> ready_{false};
  KeyStore keys_;
  MetricsSources::KeysReloads keys_reloads_;
  // Signs the lists' cursors (random, or --cursor-secret-file); set in Start.
  CursorKey cursor_key_;
  // The tenants' claims_per_s buckets (from keys_); null without keys. Before
  // the routes, which use it.
  std::unique_ptr<ClaimRateLimiter> rate_limiter_;
  // Each key's heartbeat items a second (--heartbeat-items-per-key-per-s).
  std::unique_ptr<HeartbeatKeyBudget> heartbeat_budget_;
  std::unique_ptr<store::Storage> storage_;
  std::unique_ptr<allocator::Allocator> allocator_;
  // Whether the nodes agree on each tenant's limits; after allocator_ (its
  // node id), stopped before the storage.
  std::unique_ptr<TenantLimitsWatch> tenant_limits_;
  std::unique_ptr<batcher::Batcher> batcher_;
  std::unique_ptr<kvmirror::Mirror> mirror_;
  // Read by /metrics; written by the router and the claim route.
  RequestMetrics request_metrics_;
  base::LatencyHistogram claim_latency_;
  std::unique_ptr<Router> router_;
  // Declared before the routes and demo_: they post to its executor, so it
  // dies last.
  std::unique_ptr<HttpServer> http_;
  // The routes' blocking reads; after http_ (its jobs post to its executor),
  // before the routes (they post to it).
  std::unique_ptr<ReaderPool> readers_;
  std::unique_ptr<HealthRoutes> health_routes_;
  std::unique_ptr<SessionRoutes> session_routes_;
  std::unique_ptr<ContainerRoutes> container_routes_;
  std::unique_ptr<EventRoutes> event_routes_;
  std::unique_ptr<WebhookDeliverer> webhooks_;
  std::unique_ptr<HeartbeatRoutes> heartbeat_routes_;
  std::unique_ptr<OpsRoutes> ops_routes_;
  std::unique_ptr<Demo> demo_;
  std::unique_ptr<IoWatch> io_watch_;
  // mirror_ for the batcher's reaper thread (its live containers by pool),
  // set once the mirror has started.
  std::atomic<kvmirror::Mirror*> mirror_for_reaper_{nullptr};
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_SERVICE_H_
