#include "server/api/session_routes.h"

#include <boost/asio/post.hpp>

#include <chrono>

#include "server/api/errors.h"
#include "server/api/request_bodies.h"

namespace server {
namespace {

using allocator::Outcome;

Response BadBody(const BodyError& e) { return ErrorResponse(400, e.code, e.message); }

// Runs `make` on an io thread and replies with what it returns. Used by every
// callback of the allocator and registry, which run on a writer thread.
template <typename Make>
void ReplyOnIo(const boost::asio::any_io_executor& io, Reply reply, Make make) {
  boost::asio::post(io, [reply = std::move(reply), make = std::move(make)]() mutable {
    try {
      reply(make());
    } catch (const std::exception& e) {
      LogLine(std::string("edgealloc: internal error making a reply: ") + e.what());
      reply(ErrorResponse(500, "internal", "internal error; it has been logged"));
    }
  });
}

Response SessionResponse(const allocator::SessionResult& r, int ok_status) {
  if (r.outcome != Outcome::kOk && r.outcome != Outcome::kReplayed) {
    return OutcomeResponse(r.outcome, r.message);
  }
  Response res = JsonResponse(ok_status, SessionJson(r.session));
  if (r.outcome == Outcome::kReplayed) res.set("Idempotent-Replayed", "true");
  return res;
}

}  // namespace

Response OutcomeResponse(allocator::Outcome outcome, const std::string& message) {
  HttpStatus st = HttpStatusOf(outcome);
  if (outcome == Outcome::kError) {
    // A storage failure: say so in the log; the client gets a retryable 503.
    LogLine("edgealloc: storage error: " + message);
  }
  return ErrorResponse(st.status, st.code, message.empty() ? st.code : message);
}

allocator::Caller CallerOf(const Principal& who) {
  allocator::Caller c;
  c.tenant = who.tenant;
  c.admin = who.role == Role::kAdmin;
  return c;
}

Api::Api(allocator::Allocator* allocator, allocator::Registry* registry,
         boost::asio::any_io_executor io, ApiOptions options, const std::atomic<bool>* ready)
    : allocator_(allocator), registry_(registry), io_(std::move(io)), options_(options),
      ready_(ready) {}

void Api::AddRoutes(Router* router) {
  using http::verb;
  auto bind = [this](void (Api::*fn)(RouteRequest, Reply)) {
    return [this, fn](RouteRequest req, Reply reply) { (this->*fn)(std::move(req), std::move(reply)); };
  };
  router->Add(verb::get, "/healthz", Access::kPublic, [](RouteRequest, Reply reply) {
    reply(JsonResponse(200, "{\"status\":\"ok\"}"));
  });
  router->Add(verb::get, "/readyz", Access::kPublic, [this](RouteRequest, Reply reply) {
    if (ready_->load()) return reply(JsonResponse(200, "{\"status\":\"ready\"}"));
    reply(ErrorResponse(503, "not_ready", "starting or stopping"));
  });
  router->Add(verb::post, "/v1/sessions", Access::kTenant, bind(&Api::Claim));
  router->Add(verb::get, "/v1/sessions/{id}", Access::kTenant, bind(&Api::GetSession));
  router->Add(verb::delete_, "/v1/sessions/{id}", Access::kTenant, bind(&Api::Release));
  router->Add(verb::post, "/v1/sessions/{id}/renew", Access::kTenant, bind(&Api::Renew));
  router->Add(verb::post, "/v1/containers", Access::kAdmin, bind(&Api::Register));
  router->Add(verb::get, "/v1/containers/{id}", Access::kAdmin, bind(&Api::GetContainer));
  router->Add(verb::delete_, "/v1/containers/{id}", Access::kAdmin, bind(&Api::Remove));
  router->Add(verb::post, "/v1/containers/{id}/drain", Access::kAdmin, bind(&Api::Drain));
}

void Api::Claim(RouteRequest req, Reply reply) {
  const auto started = std::chrono::steady_clock::now();
  allocator::ClaimRequest claim;
  BodyError error;
  if (!ParseClaim(req.http.body(), options_.max_lease_ms, &claim, &error)) {
    return reply(BadBody(error));
  }
  claim.caller = CallerOf(req.who);
  allocator_->Claim(std::move(claim), [io = io_, reply, started,
                                       latency = options_.claim_latency](allocator::SessionResult r) {
    ReplyOnIo(io, reply, [r = std::move(r), started, latency] {
      Response res = SessionResponse(r, 201);
      if (latency) latency->Observe(std::chrono::steady_clock::now() - started);
      return res;
    });
  });
}

void Api::GetSession(RouteRequest req, Reply reply) {
  // An exact read on a pooled read-only connection: never waits for a writer.
  allocator::SessionResult r = allocator_->GetSession(CallerOf(req.who), req.params[0]);
  reply(SessionResponse(r, 200));
}

void Api::Renew(RouteRequest req, Reply reply) {
  int64_t token = 0, lease_ms = 0;
  BodyError error;
  if (!ParseRenew(req.http.body(), options_.max_lease_ms, &token, &lease_ms, &error)) {
    return reply(BadBody(error));
  }
  allocator_->Renew(CallerOf(req.who), req.params[0], token, lease_ms,
                    [io = io_, reply](allocator::SessionResult r) {
                      ReplyOnIo(io, reply, [r = std::move(r)] { return SessionResponse(r, 200); });
                    });
}

void Api::Release(RouteRequest req, Reply reply) {
  std::string text;
  int64_t token = 0;
  if (!req.QueryParam("token", &text)) {
    return reply(ErrorResponse(400, "invalid_field",
                               "token: is required, as ?token=N (the session's fencing token)"));
  }
  if (!ParseInt64(text, &token)) {
    return reply(ErrorResponse(400, "invalid_field", "token: must be an integer"));
  }
  allocator_->Release(CallerOf(req.who), req.params[0], token,
                      [io = io_, reply](allocator::SessionResult r) {
                        ReplyOnIo(io, reply, [r = std::move(r)] {
                          if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message);
                          return Response{http::status::no_content, 11};
                        });
                      });
}

void Api::Register(RouteRequest req, Reply reply) {
  std::vector<allocator::ContainerSpec> specs;
  BodyError error;
  if (!ParseRegistration(req.http.body(), &specs, &error)) return reply(BadBody(error));
  if (specs.empty()) return reply(JsonResponse(200, "{\"registered\":0}"));
  registry_->Register(std::move(specs), [io = io_, reply](allocator::ContainerResult r) {
    ReplyOnIo(io, reply, [r = std::move(r)] {
      if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message);
      return JsonResponse(200, "{\"registered\":" + std::to_string(r.count) + "}");
    });
  });
}

void Api::GetContainer(RouteRequest req, Reply reply) {
  allocator::ContainerResult r = registry_->Get(req.params[0]);
  if (r.outcome != Outcome::kOk) return reply(OutcomeResponse(r.outcome, r.message));
  reply(JsonResponse(200, ContainerJson(r.container)));
}

void Api::Drain(RouteRequest req, Reply reply) {
  std::string id = req.params[0];
  auto* registry = registry_;
  registry_->Drain(id, [io = io_, reply, id, registry](allocator::ContainerResult r) {
    ReplyOnIo(io, reply, [r = std::move(r), id, registry] {
      if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message);
      // 200 with the container as it is now (status draining, or still
      // picked with drain_requested until its session ends).
      allocator::ContainerResult now = registry->Get(id);
      if (now.outcome != Outcome::kOk) return JsonResponse(200, "{\"status\":\"draining\"}");
      return JsonResponse(200, ContainerJson(now.container));
    });
  });
}

void Api::Remove(RouteRequest req, Reply reply) {
  registry_->Remove(req.params[0], [io = io_, reply](allocator::ContainerResult r) {
    ReplyOnIo(io, reply, [r = std::move(r)] {
      if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message);
      return Response{http::status::no_content, 11};
    });
  });
}

}  // namespace server
