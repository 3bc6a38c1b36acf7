#include "server/service.h"

#include <memory>
#include <string>
#include <utility>

#include "base/build_info.h"
#include "server/keys_reload.h"
#include "server/http/log.h"
#include "server/service_options.h"

namespace server {

Service::Service(ServeConfig config) : config_(std::move(config)) {}

Service::Service(ServeConfig config, StorageWrap wrap)
    : config_(std::move(config)), wrap_(std::move(wrap)) {}

Service::~Service() { Stop(); }

store::Status Service::Start() {
  RETURN_IF_ERROR(LoadKeys());
  RETURN_IF_ERROR(RequireKernelRandom());
  RETURN_IF_ERROR(config_.cursor_secret_file.empty()
                      ? CursorKey::Random(&cursor_key_)
                      : CursorKey::FromFile(config_.cursor_secret_file, &cursor_key_));
  RETURN_IF_ERROR(store::OpenStorage(StorageOptionsOf(config_), &storage_));
  if (wrap_) storage_ = wrap_(std::move(storage_));
  batcher::BatcherOptions batcher_options = BatcherOptionsOf(config_);
  // The mirror starts after the batcher: until it has, no mass silence.
  batcher_options.live_by_pool = [this] {
    batcher::LiveByPool live;
    kvmirror::Mirror* mirror = mirror_for_reaper_.load();
    if (mirror == nullptr) return live;
    // Held by name: in a range-for the temporary would die first.
    const std::shared_ptr<const kvmirror::Snapshot> snapshot = mirror->Current();
    for (const auto& [region, pools] : snapshot->regions()) {
      for (const auto& [pool, c] : pools) live[{region, pool}] = c.available + c.picked + c.draining;
    }
    return live;
  };
  batcher_ = std::make_unique<batcher::Batcher>(storage_.get(), std::move(batcher_options));
  batcher_->Start();
  store::Status s = StartMirror();
  if (s.ok()) mirror_for_reaper_.store(mirror_.get());
  if (s.ok()) {
    StartAllocator();
    StartWebhooks();
    MakeHttpServer();
    io_watch_ = std::make_unique<IoWatch>(http_->executor(), &batcher_->hearing());
    // Added in this order, which is also the order of the routes' series in
    // edgealloc_http_requests_total.
    AddApiRoutes();
    AddOpsRoutes();
    started_ = true;
    s = StartDemo();
  }
  if (s.ok()) s = http_->Start();
  if (s.ok()) io_watch_->Start();
  if (!s.ok()) {
    Stop();
    return s;
  }
  // Ready only now: the databases are open, the mirror has read them once
  // and the batcher's threads run.
  ready_.store(true);
  return store::Status::Ok();
}

store::Status Service::LoadKeys() {
  if (config_.keys_file.empty()) return store::Status::Ok();
  return ReadKeysFile(config_.keys_file, !IsLoopbackHost(config_.host), &keys_);
}

bool Service::ReloadKeys() {
  if (config_.keys_file.empty()) {
    LogWarn("edgealloc: SIGHUP: no keys file to reload (open mode, loopback only)");
    return false;
  }
  KeyStore next;
  store::Status s = ReadKeysFile(config_.keys_file, !IsLoopbackHost(config_.host), &next);
  if (!s.ok()) {
    keys_reloads_.failed.fetch_add(1, std::memory_order_relaxed);
    LogError("edgealloc: SIGHUP: the keys file was not reloaded, the keys in use stay: " +
             s.ToString());
    return false;
  }
  const std::map<std::string, store::TenantLimits> before = keys_.tenants();
  // The buckets first: a new tenant's first claim is already limited.
  if (rate_limiter_ != nullptr) rate_limiter_->SetLimits(next.tenants(), ClaimRateLimiter::Clock::now());
  keys_ = next;
  // The other nodes compare against the limits this node applies now.
  if (tenant_limits_) tenant_limits_->SetMine(MyTenantLimits());
  keys_reloads_.ok.fetch_add(1, std::memory_order_relaxed);
  LogLine(DescribeReload(config_.keys_file, before, keys_));
  return true;
}

store::Status Service::StartMirror() {
  // The first read happens here, so /v1/capacity is never served empty.
  std::vector<std::unique_ptr<store::CapacityReader>> readers;
  for (int p = 0; p < storage_->partitions(); ++p) {
    readers.push_back(storage_->NewCapacityReader(p, kvmirror::kReaderBusyTimeoutMs));
  }
  kvmirror::MirrorOptions mirror_options;
  mirror_options.history_interval_ms = config_.history_interval_ms;
  mirror_ = std::make_unique<kvmirror::Mirror>(std::move(readers), config_.mirror_refresh_ms,
                                               std::move(mirror_options));
  return mirror_->Start();
}

void Service::StartAllocator() {
  allocator_ = std::make_unique<allocator::Allocator>(storage_.get(), AllocatorOptionsOf(config_));
  // Per-pool claim counts keep the pools the mirror knows (a pool registered
  // since its last refresh counts as unknown until the next), and an
  // unknown pool's answer names its region's pools.
  allocator::PoolDirectory directory;
  directory.exists = [mirror = mirror_.get()](const std::string& region, const std::string& pool) {
    auto snapshot = mirror->Current();
    return snapshot == nullptr || snapshot->Find(region, pool) != nullptr;
  };
  directory.pools_of = [mirror = mirror_.get()](const std::string& region) {
    std::vector<std::string> pools;
    auto snapshot = mirror->Current();
    if (snapshot == nullptr) return pools;
    auto it = snapshot->regions().find(region);
    if (it == snapshot->regions().end()) return pools;
    for (const auto& [pool, counts] : it->second) pools.push_back(pool);
    return pools;
  };
  allocator_->SetPoolDirectory(std::move(directory));
  allocator_->backups().SetLag(
      [batcher = batcher_.get()](const std::string& region) { return batcher->RegionLagMs(region); });
  allocator_->Start();
  StartTenantLimitsWatch();
}

void Service::StartTenantLimitsWatch() {
  TenantLimitsWatch::Options options;
  options.node_id = allocator_->options().node_id;
  options.period_ms = config_.claims_publish_ms;
  // As the fleet's claim counts: a node silent for that long has left.
  options.window_ms = allocator::kFleetClaimWindowMs;
  options.warn = [](const std::string& message) { LogWarn("edgealloc: " + message); };
  options.mine = MyTenantLimits();
  tenant_limits_ = std::make_unique<TenantLimitsWatch>(storage_.get(), std::move(options));
  tenant_limits_->Start();
}

std::vector<store::TenantLimitsDigest> Service::MyTenantLimits() const {
  const auto text = [this](const store::TenantLimits& limits) {
    return TenantLimitsText(limits, config_.max_sessions_per_tenant);
  };
  std::vector<store::TenantLimitsDigest> mine;
  mine.push_back({"", "", text(store::TenantLimits{})});
  for (const auto& [tenant, limits] : keys_.tenants()) mine.push_back({"", tenant, text(limits)});
  return mine;
}

void Service::StartWebhooks() {
  WebhookDelivererOptions options = WebhookOptionsOf(config_);
  options.node_id = allocator_->options().node_id;
  options.targets = [keys = &keys_] { return keys->webhooks(); };
  options.warn = [](const std::string& message) { LogWarn("edgealloc: " + message); };
  webhooks_ = std::make_unique<WebhookDeliverer>(storage_.get(), std::move(options));
  webhooks_->Start();
}

void Service::MakeHttpServer() {
  router_ = std::make_unique<Router>(&keys_, &request_metrics_);
  HttpServerOptions http_options;
  http_options.host = config_.host;
  http_options.port = config_.port;
  http_options.threads = config_.threads;
  http_options.max_body_bytes = config_.max_body_bytes;
  http_options.request_deadline = std::chrono::milliseconds(config_.request_deadline_ms);
  http_ = std::make_unique<HttpServer>(http_options, router_.get());
  readers_ = std::make_unique<ReaderPool>(
      config_.reader_threads,
      kReaderQueuePerThread * static_cast<size_t>(config_.reader_threads));
}

void Service::AddApiRoutes() {
  health_routes_ = std::make_unique<HealthRoutes>(&ready_, storage_.get(), batcher_.get());
  health_routes_->AddRoutes(router_.get());
  SessionRoutesOptions session_options;
  session_options.max_lease_ms = config_.max_lease_ms;
  session_options.claim_latency = &claim_latency_;
  session_options.readers = readers_.get();
  // SQLite with shards reads other shard files before it submits a claim
  // (its idempotency key, the tenant's sessions), a registration, drain or
  // removal (where the id lives) and a heartbeat (its partition): those go
  // through the reader threads too. PostgreSQL submits without reading.
  const bool sharded = config_.shards > 1;
  session_options.claims_off_io = sharded;
  session_options.keys = &keys_;
  rate_limiter_ = std::make_unique<ClaimRateLimiter>(keys_.tenants());
  session_options.rate_limiter = rate_limiter_.get();
  session_options.cursor_key = &cursor_key_;
  session_routes_ =
      std::make_unique<SessionRoutes>(allocator_.get(), http_->executor(), session_options);
  session_routes_->AddRoutes(router_.get());
  container_routes_ =
      std::make_unique<ContainerRoutes>(storage_.get(), http_->executor(), readers_.get(),
                                        &cursor_key_, sharded);
  container_routes_->AddRoutes(router_.get());
  event_routes_ = std::make_unique<EventRoutes>(storage_.get(), http_->executor(),
                                                readers_.get(), kMaxEventWaiters,
                                                kMaxEventWaitersPerTenant);
  event_routes_->AddRoutes(router_.get());
  HeartbeatRoutesOptions heartbeat_options;
  heartbeat_options.max_clock_skew_ms = config_.max_clock_skew_ms;
  heartbeat_options.storage = storage_.get();
  heartbeat_options.mirror = mirror_.get();
  heartbeat_budget_ = std::make_unique<HeartbeatKeyBudget>(
      static_cast<double>(config_.heartbeat_items_per_key_per_s));
  heartbeat_options.budget = heartbeat_budget_.get();
  if (sharded) {
    // The batcher then asks the storage each item's partition, which may
    // read the shard files: on a reader thread.
    heartbeat_options.readers = readers_.get();
    heartbeat_options.io = http_->executor();
  }
  heartbeat_routes_ =
      std::make_unique<HeartbeatRoutes>(batcher_.get(), &ready_, std::move(heartbeat_options));
  heartbeat_routes_->AddRoutes(router_.get());
}

void Service::AddOpsRoutes() {
  MetricsSources metrics;
  metrics.allocator = &allocator_->stats();
  metrics.pool_claims = allocator_.get();
  metrics.claim_latency = &claim_latency_;
  metrics.batcher = batcher_.get();
  metrics.heartbeat_keys = {&heartbeat_budget_->refused_budget, &heartbeat_budget_->refused_items,
                            &heartbeat_budget_->folded};
  metrics.reads_refused = {&readers_->refusals().full, &readers_->refusals().owner_share};
  metrics.mirror = mirror_.get();
  metrics.storage = storage_.get();
  metrics.requests = &request_metrics_;
  metrics.http = http_.get();
  // Only the tenants the keys file names: a client cannot add a series.
  metrics.tenants = [keys = &keys_, limiter = rate_limiter_.get(), alloc = allocator_.get(),
                     watch = tenant_limits_.get()] {
    std::vector<MetricsSources::TenantSample> out;
    const std::map<std::string, store::TenantLimits> tenants = keys->tenants();
    out.reserve(tenants.size());
    for (const auto& entry : tenants) {
      out.push_back({entry.first, limiter->RateLimited(entry.first), alloc->WaitingOf(entry.first),
                     watch->Mismatched(entry.first)});
    }
    return out;
  };
  metrics.keys_reloads = &keys_reloads_;
  metrics.webhooks = &webhooks_->stats();
  metrics.build_info = {base::kVersion, base::kCommit, store::SqliteLibraryVersion(),
                        store::LibpqLibraryVersion()};
  kvmirror::WarmBuffers warm_buffers;
  std::string warm_buffer_error;  // none: the flag's check read every value
  (void)kvmirror::WarmBuffers::Parse(config_.warm_buffer, &warm_buffers, &warm_buffer_error);
  ops_routes_ =
      std::make_unique<OpsRoutes>(mirror_.get(), std::move(metrics), std::move(warm_buffers));
  ops_routes_->AddRoutes(router_.get());
}

store::Status Service::StartDemo() {
  if (!config_.demo) return store::Status::Ok();
  demo_ = std::make_unique<Demo>(storage_.get(), batcher_.get(), config_.dead_after_ms);
  std::string error;
  if (!demo_->Start(&error)) return store::Status::IOError(error);
  return store::Status::Ok();
}

void Service::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  // Not ready first: /readyz answers 503 and new heartbeats are refused with
  // 503, so a load balancer and the containers move on while we drain.
  ready_.store(false);
  // The io loop is no longer watched: a loop that stops is not deaf.
  if (io_watch_) io_watch_->Stop();
  // Waiting claims are answered at once (503), not held to the grace's end.
  if (allocator_) allocator_->EndWaits();
  // So are readers waiting for events (with what they can read now).
  if (event_routes_) event_routes_->Stop();
  // Deliveries stop while the writers run: each lets its lease lapse.
  if (webhooks_) webhooks_->Stop();
  if (http_) {
    http_->StopAccepting();
    if (!http_->WaitIdle(grace)) {
      LogWarn("edgealloc: " + std::to_string(http_->in_flight()) +
              " requests still in flight after the grace period; stopping anyway");
    }
  }
  // Reads still queued past the grace are answered 503 and the ones running
  // end, before the allocator and batcher stop: no claim or heartbeat a
  // reader thread holds is handed to them after. From here a drain's reply
  // (a writer callback) is the bare status, a new read 503.
  if (readers_) readers_->Stop();
  if (demo_) demo_->Stop();
  // The batcher drains through the writers, so it stops while they still
  // run: every heartbeat answered 202 is in the database once this returns.
  if (batcher_) batcher_->Stop();
  mirror_for_reaper_.store(nullptr);
  if (tenant_limits_) tenant_limits_->Stop();
  if (allocator_) allocator_->Stop();
  if (mirror_) mirror_->Stop();
  // The writers run every job they accepted, so every callback has run, and
  // posted its reply, before the io threads and their io_context go away.
  if (storage_) storage_->StopWriters();
  // A stop against a failing store is bounded (the batcher's kStopGiveUpMs,
  // the writers' stop timeout): say what that left unwritten.
  if (batcher_ && batcher_->stats().lost.load() > 0) {
    LogError("edgealloc: " + std::to_string(batcher_->stats().lost.load()) +
             " accepted heartbeats were not written before stopping (the database failed "
             "throughout the stop); their containers are judged by their last written heartbeat");
  }
  if (storage_) {
    uint64_t dropped = 0;
    for (int p = 0; p < storage_->partitions(); ++p) {
      dropped += storage_->writer_stats(p).dropped_at_stop.load();
    }
    if (dropped > 0) {
      LogError("edgealloc: " + std::to_string(dropped) +
               " queued writes were answered unwritten when stopping (the database failed "
               "throughout the stop)");
    }
  }
  // Those callbacks posted their replies; the io threads write them before
  // they stop (bounded by the write timeout of each), so nothing committed
  // goes unanswered, however long the drain took.
  if (http_ && !http_->WaitIdle(kReplyGrace)) {
    LogWarn("edgealloc: " + std::to_string(http_->in_flight()) +
            " replies not written when stopping (clients not reading)");
  }
  if (http_) http_->Stop();
  demo_.reset();
  webhooks_.reset();
  io_watch_.reset();
  ops_routes_.reset();
  heartbeat_routes_.reset();
  container_routes_.reset();
  event_routes_.reset();
  session_routes_.reset();
  health_routes_.reset();
  readers_.reset();
  batcher_.reset();
  mirror_.reset();
  allocator_.reset();
  storage_.reset();
  http_.reset();
  router_.reset();
}

}  // namespace server
