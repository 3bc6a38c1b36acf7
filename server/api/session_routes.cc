#include "server/api/session_routes.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "server/api/errors.h"
#include "server/api/list_pages.h"
#include "server/api/reply_bodies.h"
#include "server/api/reply_on_io.h"
#include "server/api/request_bodies.h"

namespace server {
namespace {

using store::Outcome;

// A failed session call's response: an ended session's says how it ended.
Response SessionErrorResponse(const store::SessionResult& r, std::string_view request_id) {
  if (r.outcome == Outcome::kSessionEnded) {
    return ErrorResponse(ApiError::kSessionEnded, r.message,
                         ",\"end_reason\":" + JsonQuote(r.end.reason) +
                             ",\"ended_at_ms\":" + std::to_string(r.end.ended_at_ms));
  }
  if (r.outcome == Outcome::kOverloaded && r.waiter_bound) {
    return WaiterBoundResponse(r.message, request_id);
  }
  Response res = OutcomeResponse(r.outcome, r.message, request_id);
  if (r.outcome == Outcome::kNoCapacity && r.retry_after_s > 0) {
    res.set(http::field::retry_after, std::to_string(r.retry_after_s));
  }
  return res;
}

Response SessionResponse(const store::SessionResult& r, int ok_status,
                         std::string_view request_id) {
  if (r.outcome != Outcome::kOk && r.outcome != Outcome::kReplayed) {
    return SessionErrorResponse(r, request_id);
  }
  std::string body = SessionJson(r.session);
  if (!r.served_by.empty()) {
    // A claim's: which of its regions served it (home, fallback, backup).
    body.pop_back();
    body += ",\"served_by\":" + JsonQuote(r.served_by) + "}";
  }
  Response res = JsonResponse(ok_status, std::move(body));
  if (r.outcome == Outcome::kReplayed) res.set("Idempotent-Replayed", "true");
  return res;
}

}  // namespace

store::Caller CallerOf(const Principal& who) {
  store::Caller c;
  c.tenant = who.tenant;
  c.admin = who.role == Role::kAdmin;
  c.limits = who.limits;
  return c;
}

SessionRoutes::SessionRoutes(allocator::Allocator* allocator, boost::asio::any_io_executor io,
                             SessionRoutesOptions options)
    : allocator_(allocator), io_(std::move(io)), options_(options) {}

void SessionRoutes::AddRoutes(Router* router) {
  using http::verb;
  // Each route calls its member function straight: no hop between.
  const auto bind = [this](auto fn) { return std::bind_front(fn, this); };
  // A claim's body is read only once its tenant's claims_per_s has a token
  // for it (on this node): a tenant past its rate spends nothing more here.
  RouteOptions claim;
  claim.max_body_bytes = kMaxClaimBodyBytes;
  if (ClaimRateLimiter* limiter = options_.rate_limiter) {
    claim.before_body = [limiter](const Principal& who) -> std::optional<Response> {
      int64_t retry_after_s = 0;
      const auto now = ClaimRateLimiter::Clock::now();
      if (limiter->TryTake(who.tenant, now, &retry_after_s)) return std::nullopt;
      const auto level = limiter->LevelOf(who.tenant, now);
      return RateLimitedResponse(who.tenant, level ? level->rate : 0, retry_after_s);
    };
  }
  RouteOptions renew;
  renew.max_body_bytes = kMaxRenewBodyBytes;
  router->Add(verb::post, "/v1/sessions", Access::kTenant, bind(&SessionRoutes::Claim),
              std::move(claim));
  router->Add(verb::get, "/v1/sessions", Access::kTenant, bind(&SessionRoutes::ListSessions));
  router->Add(verb::get, "/v1/sessions/{id}", Access::kTenant, bind(&SessionRoutes::GetSession));
  router->Add(verb::delete_, "/v1/sessions/{id}", Access::kTenant, bind(&SessionRoutes::Release));
  router->Add(verb::post, "/v1/sessions/{id}/renew", Access::kTenant, bind(&SessionRoutes::Renew),
              std::move(renew));
  router->Add(verb::get, "/v1/limits", Access::kTenant, bind(&SessionRoutes::Limits));
}

void SessionRoutes::Limits(RouteRequest req, Reply reply) {
  // A tenant's key reads its own limits (naming another tenant is 403); an
  // admin key names a tenant, or reads its own tenant's (`default` for an
  // admin key naming none, and in open mode).
  std::string tenant = req.who.tenant;
  std::string asked;
  const bool named = req.QueryParam("tenant", &asked);
  if (named && HasNul(asked)) return reply(NulParamResponse("tenant"));
  if (req.who.role == Role::kAdmin) {
    if (named && !asked.empty()) tenant = asked;
  } else if (named && asked != tenant) {
    return reply(RefusalResponse(kOwnLimitsOnly));
  }
  const store::TenantLimits own = options_.keys != nullptr ? options_.keys->LimitsOf(tenant)
                                  : tenant == req.who.tenant ? req.who.limits
                                                             : store::TenantLimits{};
  struct Read {
    store::Status status;
    LimitsBody body;
  };
  ReadOffIo(
      options_.readers, TenantReads(req.who.tenant), io_, reply,
      [allocator = allocator_, limiter = options_.rate_limiter, tenant, own] {
        Read r;
        allocator::Allocator::TenantLimits quota;
        r.status = allocator->Limits(tenant, &quota);
        LimitsBody& b = r.body;
        b.tenant = tenant;
        b.max_sessions = own.max_sessions != store::TenantLimits::kUnset ? own.max_sessions
                                                                         : quota.max_sessions;
        b.sessions = quota.sessions;
        b.max_waiters = own.max_waiters != store::TenantLimits::kUnset
                            ? own.max_waiters
                            : allocator->options().max_waiters_per_tenant;
        b.waiting = allocator->WaitingOf(tenant);
        if (limiter != nullptr) {
          if (auto level = limiter->LevelOf(tenant, ClaimRateLimiter::Clock::now())) {
            b.claims_per_s = level->rate;
            b.claim_tokens = level->tokens;
          }
        }
        return r;
      },
      [id = req.RequestId()](const Read& r) {
        if (!r.status.ok()) {
          return StatusResponse(r.status, id);
        }
        return JsonResponse(200, LimitsJson(r.body));
      });
}

void SessionRoutes::ListSessions(RouteRequest req, Reply reply) {
  std::string state;
  const bool ended = req.QueryParam("state", &state) && state == "ended";
  if (!state.empty() && state != "live" && state != "ended") {
    return reply(RefusalResponse(kUnknownSessionState));
  }
  store::SessionFilter filter;
  std::string asked_tenant;
  const bool named = req.QueryParam("tenant", &asked_tenant);
  if (named && HasNul(asked_tenant)) return reply(NulParamResponse("tenant"));
  if (req.who.role == Role::kAdmin) {
    filter.tenant = asked_tenant;  // empty or absent: every tenant's
  } else {
    if (named && asked_tenant != req.who.tenant) {
      return reply(RefusalResponse(kOwnSessionsOnly));
    }
    filter.tenant = req.who.tenant;
  }
  BodyError error;
  if (auto refused = ReadRegionPoolFilter(req, &filter.region, &filter.pool)) {
    return reply(std::move(*refused));
  }
  std::string label;
  if (req.QueryParamCount("label") > 1) {
    // One filter a request: a second was silently ignored before.
    return reply(RefusalResponse(kOneLabelOnly));
  }
  if (req.QueryParam("label", &label) &&
      !ParseLabelFilter(label, &filter.label_key, &filter.label_value, &error)) {
    return reply(BodyErrorResponse(error));
  }
  // The label's presence is part of the query: "k:" (an empty value) is not
  // "no label".
  const uint64_t fingerprint = ListFingerprint(
      {ended ? "ended sessions" : "sessions", filter.tenant, filter.region, filter.pool,
       filter.label_key.empty() ? "" : "label", filter.label_key, filter.label_value});
  int limit = 0;
  std::string after;
  if (auto refused = ReadPageParams(req, *options_.cursor_key, fingerprint, &limit, &after)) {
    return reply(std::move(*refused));
  }
  // The storage stops reading at the page's bytes too, not only at `limit`.
  filter.page_budget_bytes = kListPageBudgetBytes;
  if (ended) {
    return ReadListPage<store::EndedSession>(
        options_.readers, TenantReads(req.who.tenant), io_, reply, options_.cursor_key,
        fingerprint, req.RequestId(), "sessions",
        [allocator = allocator_, filter = std::move(filter), after = std::move(after), limit](
            std::vector<store::EndedSession>* page, std::string* next_after) {
          return allocator->ListEndedSessions(filter, after, limit, page, next_after);
        },
        EndedSessionJson);
  }
  ReadListPage<store::Session>(
      options_.readers, TenantReads(req.who.tenant), io_, reply, options_.cursor_key, fingerprint,
      req.RequestId(), "sessions",
      [allocator = allocator_, filter = std::move(filter), after = std::move(after), limit](
          std::vector<store::Session>* page, std::string* next_after) {
        return allocator->ListSessions(filter, after, limit, page, next_after);
      },
      SessionJson);
}

void SessionRoutes::Claim(RouteRequest req, Reply reply) {
  const auto started = std::chrono::steady_clock::now();
  store::ClaimRequest claim;
  BodyError error;
  if (!ParseClaim(req.http.body(), options_.max_lease_ms, &claim, &error)) {
    return reply(BodyErrorResponse(error));
  }
  claim.caller = CallerOf(req.who);
  // The tenant's token was taken before the body was read (AddRoutes). An
  // idempotent retry takes one too (whether it replays is known only once
  // the storage looked), and gets it back when it did.
  ClaimRateLimiter* limiter = options_.rate_limiter;
  // A claim that may wait gives up when its client does, and its deadline
  // counts from the wait's end.
  std::function<bool()> abandoned;
  if (claim.wait_ms > 0) {
    abandoned = req.WatchClientGone();
    req.AllowWait(std::chrono::milliseconds(claim.wait_ms));
  }
  store::SessionCallback done = [io = io_, reply, started, latency = options_.claim_latency,
                                 id = req.RequestId(), limiter,
                                 tenant = claim.caller.tenant](store::SessionResult r) {
    if (limiter != nullptr && r.outcome == Outcome::kReplayed) {
      limiter->Refund(tenant, ClaimRateLimiter::Clock::now());
    }
    ReplyOnIo(io, reply, [r = std::move(r), started, latency, id] {
      Response res = SessionResponse(r, 201, id);
      if (latency) latency->Observe(std::chrono::steady_clock::now() - started);
      return res;
    });
  };
  if (options_.claims_off_io) {
    return CallOffIo(options_.readers, io_, reply,
                     [allocator = allocator_, claim = std::move(claim), done = std::move(done),
                      abandoned = std::move(abandoned)]() mutable {
                       allocator->Claim(std::move(claim), std::move(done), std::move(abandoned));
                     });
  }
  allocator_->Claim(std::move(claim), std::move(done), std::move(abandoned));
}

void SessionRoutes::GetSession(RouteRequest req, Reply reply) {
  // An exact read on a pooled read-only connection: never waits for a
  // writer, but may wait for the database, so on a reader thread.
  ReadOffIo(
      options_.readers, TenantReads(req.who.tenant), io_, reply,
      [allocator = allocator_, caller = CallerOf(req.who), session_id = req.params[0]] {
        return allocator->GetSession(caller, session_id);
      },
      [id = req.RequestId()](const store::SessionResult& r) {
        return SessionResponse(r, 200, id);
      });
}

void SessionRoutes::Renew(RouteRequest req, Reply reply) {
  int64_t token = 0, lease_ms = 0;
  bool shorten = false;
  BodyError error;
  if (!ParseRenew(req.http.body(), options_.max_lease_ms, &token, &lease_ms, &shorten, &error)) {
    return reply(BodyErrorResponse(error));
  }
  allocator_->Renew(
      CallerOf(req.who), req.params[0], token, lease_ms,
      [io = io_, reply, id = req.RequestId()](store::SessionResult r) {
        ReplyOnIo(io, reply, [r = std::move(r), id] { return SessionResponse(r, 200, id); });
      },
      shorten);
}

void SessionRoutes::Release(RouteRequest req, Reply reply) {
  BodyError error;
  if (!ParseNoBody(req.http.body(), &error)) return reply(BodyErrorResponse(error));
  std::string text;
  int64_t token = 0;
  if (!req.QueryParam("token", &text)) {
    return reply(RefusalResponse(kTokenRequired));
  }
  if (!ParseInt64(text, &token)) {
    return reply(RefusalResponse(kTokenNotInteger));
  }
  allocator_->Release(CallerOf(req.who), req.params[0], token,
                      [io = io_, reply, id = req.RequestId()](store::SessionResult r) {
                        ReplyOnIo(io, reply, [r = std::move(r), id] {
                          if (r.outcome != Outcome::kOk) return SessionErrorResponse(r, id);
                          return Response{http::status::no_content, 11};
                        });
                      });
}

}  // namespace server
