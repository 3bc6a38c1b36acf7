#include "server/ops/health_routes.h"

namespace server {

void HealthRoutes::AddRoutes(Router* router) {
  using http::verb;
  router->Add(verb::get, "/healthz", Access::kPublic, [](RouteRequest, Reply reply) {
    reply(JsonResponse(200, "{\"status\":\"ok\"}"));
  });
  router->Add(verb::get, "/readyz", Access::kPublic, [this](RouteRequest, Reply reply) {
    if (!ready_->load()) return reply(ErrorResponse(ApiError::kNotReady, "starting or stopping"));
    if (storage_ != nullptr && store::AnyWriterFailing(*storage_)) {
      return reply(ErrorResponse(ApiError::kNotReady,
                                 "the store cannot be written (this node cannot reach its "
                                 "database); see the log"));
    }
    if (batcher_ != nullptr && batcher_->AnyLaneFailing()) {
      return reply(ErrorResponse(ApiError::kNotReady,
                                 "heartbeats cannot be written (a heartbeat lane's writes fail); "
                                 "see the log"));
    }
    reply(JsonResponse(200, "{\"status\":\"ready\"}"));
  });
}

}  // namespace server
