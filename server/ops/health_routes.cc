#include "server/ops/health_routes.h"

namespace server {

void HealthRoutes::AddRoutes(Router* router) {
  using http::verb;
  router->Add(verb::get, "/healthz", Access::kPublic, [](RouteRequest, Reply reply) {
    reply(JsonResponse(200, "{\"status\":\"ok\"}"));
  });
  router->Add(verb::get, "/readyz", Access::kPublic, [this](RouteRequest, Reply reply) {
    if (ready_->load()) return reply(JsonResponse(200, "{\"status\":\"ready\"}"));
    reply(ErrorResponse(503, "not_ready", "starting or stopping"));
  });
}

}  // namespace server
