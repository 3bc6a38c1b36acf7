#include "server/ops/ops_routes.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "allocator/claim_messages.h"
#include "base/clock.h"
#include "server/ops/dashboard.h"
#include "server/ops/openapi.h"
#include "server/ops/region_metrics.h"
#include "server/ops/exposition.h"
#include "server/ops/pressure.h"

namespace server {
namespace {

// GET /v1/capacity/deaths: the reaper's deaths of the last ten minutes by
// pool (batcher::RecentDeaths), the most first.
std::string DeathsJson(const batcher::Batcher* batcher, int64_t now_ms) {
  nlohmann::json pools = nlohmann::json::array();
  if (batcher != nullptr) {
    for (const batcher::PoolDeaths& d : batcher->recent_deaths().Snapshot(now_ms)) {
      pools.push_back({{"region", d.region}, {"pool", d.pool}, {"silent", d.silent},
                       {"reported", d.reported}, {"last_ms", d.last_ms}});
    }
  }
  return nlohmann::json{{"window_ms", batcher::kRecentDeathsMs}, {"pools", std::move(pools)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The sums of one read of the fleet's claim counts: in total and by pool.
nlohmann::json FleetSumsJson(const allocator::FleetClaimsSnapshot& fleet) {
  nlohmann::json claims = {{"ok", 0}, {"no_capacity", 0}};
  nlohmann::json pools = nlohmann::json::array();
  for (const store::PoolClaimTally& p : fleet.counts.pools) {
    if (p.region.empty() && p.pool.empty()) {  // the nodes' totals
      claims = {{"ok", p.ok}, {"no_capacity", p.no_capacity}};
      continue;
    }
    pools.push_back(
        {{"region", p.region}, {"pool", p.pool}, {"ok", p.ok}, {"no_capacity", p.no_capacity}});
  }
  return {{"as_of_ms", fleet.as_of_ms}, {"claims", std::move(claims)}, {"pools", std::move(pools)}};
}

// GET /v1/capacity/claims: the claim counts of every node on the database
// (allocator::FleetClaims), as last read, and as read a little earlier.
std::string FleetClaimsJson(const allocator::FleetClaimsSnapshot& fleet,
                            const allocator::FleetClaimsSnapshot* earlier, int64_t now_ms) {
  nlohmann::json body = FleetSumsJson(fleet);
  body["window_ms"] = allocator::kFleetClaimWindowMs;
  body["age_ms"] = std::max<int64_t>(0, now_ms - fleet.as_of_ms);
  body["nodes"] = fleet.counts.nodes;
  body["earlier"] = earlier == nullptr ? nlohmann::json() : FleetSumsJson(*earlier);
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

OpsRoutes::OpsRoutes(const kvmirror::Mirror* mirror, MetricsSources metrics,
                     kvmirror::WarmBuffers warm_buffers)
    : mirror_(mirror), metrics_(std::move(metrics)), warm_buffers_(std::move(warm_buffers)) {}

Response OpsRoutes::Pressure(const RouteRequest& req) const {
  std::string region;
  std::string pool = "default";  // as a claim that names none
  if (!req.QueryParam("region", &region) || region.empty()) {
    return ErrorResponse(ApiError::kInvalidRequest,
                         "region is required: GET /v1/pressure?region=R&pool=P");
  }
  if (req.QueryParamCount("pool") > 0 && (!req.QueryParam("pool", &pool) || pool.empty())) {
    return ErrorResponse(ApiError::kInvalidRequest, "pool: must not be empty");
  }
  // One snapshot for every count, so that each is /v1/capacity's of the
  // same version.
  std::shared_ptr<const kvmirror::Snapshot> snap = mirror_->Current();
  const kvmirror::StatusCounts* counts = snap->Find(region, pool);
  if (counts == nullptr) {
    std::vector<std::string> region_pools;
    if (auto r = snap->regions().find(region); r != snap->regions().end()) {
      for (const auto& entry : r->second) region_pools.push_back(entry.first);
    }
    return ErrorResponse(ApiError::kUnknownPool,
                         allocator::UnknownPoolMessage(region, pool, false, region_pools));
  }
  PoolPressure pressure;
  if (metrics_.pool_claims != nullptr) {
    pressure.waiting = metrics_.pool_claims->WaitingOn(region, pool);
  }
  FleetClaimRates(metrics_.pool_claims, region, pool, &pressure);
  pressure.heartbeat_lag_ms = HeartbeatLagMs(metrics_.batcher, region);
  pressure.warm_buffer = warm_buffers_.For(region, pool);
  Response res = JsonResponse(200, PressureJson(*snap, base::NowMs(), region, pool, *counts, pressure));
  res.set(http::field::cache_control, "no-store");
  return res;
}

int64_t OpsRoutes::CapacityMaxAgeSeconds(int64_t refresh_ms) {
  // max-age counts whole seconds. Rounding down would say 0 (do not reuse)
  // for any period under a second and make every poll of every dashboard a
  // request; rounding up lets a cache keep a body at most a second longer
  // than the mirror does, and its age_ms still tells how old it was.
  if (refresh_ms <= 1000) return 1;
  return (refresh_ms + 999) / 1000;
}

void OpsRoutes::AddCapacityRoutes(Router* router) {
  using http::verb;
  const std::string max_age = "max-age=" + std::to_string(CapacityMaxAgeSeconds(mirror_->refresh_ms()));
  router->Add(verb::get, "/v1/capacity", Access::kCapacity,
              [this, max_age](RouteRequest, Reply reply) {
                // One pointer load: the snapshot is immutable and shared.
                std::shared_ptr<const kvmirror::Snapshot> snap = mirror_->Current();
                Response res = JsonResponse(200, snap->ToCapacityJson(base::NowMs()));
                res.set(http::field::cache_control, max_age);
                reply(std::move(res));
              });
  router->Add(verb::get, "/v1/pressure", Access::kCapacity,
              [this](RouteRequest req, Reply reply) { reply(Pressure(req)); });
  const std::string history_max_age =
      "max-age=" + std::to_string(CapacityMaxAgeSeconds(mirror_->history().interval_ms()));
  router->Add(verb::get, "/v1/capacity/history", Access::kCapacity,
              [this, history_max_age](RouteRequest, Reply reply) {
                // Rendered when the sample was taken: a pointer load and a copy.
                Response res = JsonResponse(200, *mirror_->history().Json());
                res.set(http::field::cache_control, history_max_age);
                reply(std::move(res));
              });
  router->Add(verb::get, "/v1/capacity/deaths", Access::kCapacity,
              [this, max_age](RouteRequest, Reply reply) {
                Response res = JsonResponse(200, DeathsJson(metrics_.batcher, base::NowMs()));
                res.set(http::field::cache_control, max_age);
                reply(std::move(res));
              });
  router->Add(verb::get, "/v1/capacity/regions", Access::kCapacity,
              [this](RouteRequest, Reply reply) {
                Response res = JsonResponse(200, RegionsJson(metrics_));
                res.set(http::field::cache_control, "no-store");
                reply(std::move(res));
              });
  const std::string claims_max_age =
      "max-age=" + std::to_string(CapacityMaxAgeSeconds(
                       metrics_.pool_claims ? metrics_.pool_claims->options().claims_publish_ms : 0));
  router->Add(verb::get, "/v1/capacity/claims", Access::kCapacity,
              [this, claims_max_age](RouteRequest, Reply reply) {
                auto fleet = metrics_.pool_claims == nullptr
                                 ? nullptr
                                 : metrics_.pool_claims->FleetClaimCounts();
                if (fleet == nullptr || fleet->as_of_ms == 0) {
                  reply(ErrorResponse(ApiError::kUnavailable,
                                      "the fleet's claim counts are not read yet; retry"));
                  return;
                }
                auto earlier = metrics_.pool_claims->EarlierFleetClaimCounts();
                Response res =
                    JsonResponse(200, FleetClaimsJson(*fleet, earlier.get(), base::NowMs()));
                res.set(http::field::cache_control, claims_max_age);
                reply(std::move(res));
              });
}

void OpsRoutes::AddRoutes(Router* router) {
  using http::verb;
  AddCapacityRoutes(router);
  router->Add(verb::get, "/metrics", Access::kMetrics, [this](RouteRequest, Reply reply) {
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, kMetricsContentType);
    res.set(http::field::cache_control, "no-store");
    res.body() = RenderMetrics(metrics_, base::NowMs());
    reply(std::move(res));
  });
  router->Add(verb::get, "/dashboard", Access::kPublic, [](RouteRequest, Reply reply) {
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, "text/html; charset=utf-8");
    // The page is small and changes only with the binary: revalidate.
    res.set(http::field::cache_control, "no-cache");
    // The page holds a bearer key once one is typed in: nothing but its own
    // script and style runs (a nonce a response), it talks to its own
    // origin only, is framed by nobody, and names itself to nobody.
    const std::string nonce = DashboardNonce();
    res.set("Content-Security-Policy",
            "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce +
                "'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                "form-action 'none'; frame-ancestors 'none'");
    res.set("X-Frame-Options", "DENY");
    res.set("Referrer-Policy", "no-referrer");
    res.set("X-Content-Type-Options", "nosniff");
    res.body() = DashboardPage(nonce);
    reply(std::move(res));
  });
  // A browser pointed at the server lands on the dashboard.
  router->Add(verb::get, "/", Access::kPublic, [](RouteRequest, Reply reply) {
    Response res{http::status::found, 11};
    res.set(http::field::location, "/dashboard");
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "see /dashboard\n";
    reply(std::move(res));
  });
  router->Add(verb::get, "/openapi.json", Access::kPublic, [](RouteRequest, Reply reply) {
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-cache");
    res.body() = std::string(OpenApiJson());
    reply(std::move(res));
  });
}

}  // namespace server
