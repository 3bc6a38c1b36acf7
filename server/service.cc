#include "server/service.h"

namespace server {

Service::Service(ServeConfig config) : config_(std::move(config)) {}

Service::~Service() { Stop(); }

store::Status Service::Start() {
  if (!config_.keys_file.empty()) {
    store::Status s = KeyStore::Load(config_.keys_file, &keys_);
    if (!s.ok()) return s;
  }

  store::ShardMap map(config_.db, config_.shards);
  store::DbOptions db_options;
  db_options.sync = config_.sync;
  db_options.program = "edgealloc serve";
  store::Status s = store::OpenShards(map, db_options, store::WriterOptions{}, &shards_);
  if (!s.ok()) return s;
  std::vector<store::Shard*> shards;
  for (auto& shard : shards_) shards.push_back(shard.get());

  allocator::AllocatorOptions alloc_options;
  alloc_options.candidates = config_.candidates;
  alloc_options.default_lease_ms = config_.lease_ms;
  alloc_options.max_lease_ms = config_.max_lease_ms;
  alloc_options.dead_after_ms = config_.dead_after_ms;
  alloc_options.max_sessions_per_tenant =
      config_.max_sessions_per_tenant > 0 ? config_.max_sessions_per_tenant : -1;
  allocator_ = std::make_unique<allocator::Allocator>(shards, map, alloc_options);
  allocator_->Start();
  registry_ = std::make_unique<allocator::Registry>(shards, map);

  router_ = std::make_unique<Router>(&keys_);
  HttpServerOptions http_options;
  http_options.host = config_.host;
  http_options.port = config_.port;
  http_options.threads = config_.threads;
  http_options.max_body_bytes = config_.max_body_bytes;
  Router* router = router_.get();
  http_ = std::make_unique<HttpServer>(
      http_options, [router](Request req, Reply reply) { router->Handle(std::move(req), reply); });
  ApiOptions api_options;
  api_options.max_lease_ms = config_.max_lease_ms;
  api_ = std::make_unique<Api>(allocator_.get(), registry_.get(), http_->executor(), api_options,
                               &ready_);
  api_->AddRoutes(router_.get());
  // TODO(#3, #4): the batcher adds POST /v1/heartbeats, the mirror GET
  // /v1/capacity, GET /metrics and GET /dashboard, here, with router_->Add.
  started_ = true;

  if (config_.demo) {
    demo_ = std::make_unique<Demo>(registry_.get(), config_.dead_after_ms);
    std::string error;
    if (!demo_->Start(&error)) {
      Stop();
      return store::Status::IOError(error);
    }
  }
  s = http_->Start();
  if (!s.ok()) {
    Stop();
    return s;
  }
  ready_.store(true);
  return store::Status::Ok();
}

void Service::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  ready_.store(false);
  if (http_) {
    http_->StopAccepting();
    if (!http_->WaitIdle(grace)) {
      LogLine("edgealloc: " + std::to_string(http_->in_flight()) +
              " requests still in flight after the grace period; stopping anyway");
    }
  }
  if (demo_) demo_->Stop();
  if (allocator_) allocator_->Stop();
  // Writer::Stop runs every job it accepted, so every callback has run, and
  // posted its reply, before the io threads and their io_context go away.
  for (auto& shard : shards_) {
    if (shard->writer) shard->writer->Stop();
  }
  if (http_) http_->Stop();
  demo_.reset();
  api_.reset();
  allocator_.reset();
  registry_.reset();
  shards_.clear();
  http_.reset();
  router_.reset();
}

}  // namespace server
