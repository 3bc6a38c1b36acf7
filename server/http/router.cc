#include "server/http/router.h"

#include <boost/url/encoding_opts.hpp>
#include <boost/url/parse_query.hpp>

#include <algorithm>
#include <charconv>

#include "server/http/front_rules.h"

namespace server {
namespace urls = boost::urls;
namespace {

// The body's size as its header declares it (Content-Length), or as it is
// when the request came whole (Service::Handle): the larger.
uint64_t DeclaredBodyBytes(const Request& req) {
  uint64_t declared = 0;
  const std::string_view length = req[http::field::content_length];
  std::from_chars(length.data(), length.data() + length.size(), declared);
  return std::max<uint64_t>(declared, req.body().size());
}

// A HEAD is answered by the GET route of its path (RFC 9110 §9.3.2).
bool Serves(http::verb route, http::verb request) {
  return route == request || (route == http::verb::get && request == http::verb::head);
}

}  // namespace

bool RouteRequest::QueryParam(std::string_view name, std::string* value) const {
  auto params = urls::parse_query(query);
  if (!params) return false;
  const urls::encoding_opts plus_is_space(true);
  for (const urls::param_pct_view& p : *params) {
    if (p.key.decode(plus_is_space) != name) continue;
    *value = p.has_value ? p.value.decode(plus_is_space) : std::string();
    return true;
  }
  return false;
}

int RouteRequest::QueryParamCount(std::string_view name) const {
  auto params = urls::parse_query(query);
  if (!params) return 0;
  int n = 0;
  const urls::encoding_opts plus_is_space(true);
  for (const urls::param_pct_view& p : *params) n += p.key.decode(plus_is_space) == name ? 1 : 0;
  return n;
}

void Router::Add(http::verb method, std::string pattern, Access access, RouteHandler handler,
                 RouteOptions options) {
  int metrics_route = metrics_ ? metrics_->AddRoute(pattern) : RequestMetrics::kUnmatched;
  routes_.push_back(Route{method, SplitPath(pattern), access, std::move(handler),
                          std::move(options), metrics_route});
}

bool Router::Match(const Route& route, const std::vector<std::string>& path,
                   std::vector<std::string>* params) {
  if (route.segments.size() != path.size()) return false;
  params->clear();
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& seg = route.segments[i];
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      params->push_back(path[i]);
    } else if (seg != path[i]) {
      return false;
    }
  }
  return true;
}

std::optional<Response> Router::Resolve(const Request& req, const Route** found,
                                        RouteRequest* rr, int* metrics_route) const {
  *found = nullptr;
  *metrics_route = RequestMetrics::kUnmatched;
  // Open mode makes every caller an admin: only a process of this machine
  // may be one, never a web page (DNS rebinding, cross-site requests).
  if (!keys_->configured()) {
    if (std::optional<Response> refusal = OpenModeRefusal(req)) return refusal;
  }
  Target target;
  std::string error;
  if (!ParseTarget(req.target(), &target, &error)) {
    return ErrorResponse(ApiError::kBadRequest, error);
  }
  const Route* path_match = nullptr;  // for a 405's metrics label
  std::string allow;
  auto allow_too = [&allow](http::verb verb) {
    std::string_view name = http::to_string(verb);
    if (allow.find(name) != std::string::npos) return;
    if (!allow.empty()) allow += ", ";
    allow += name;
  };
  std::vector<std::string> p;  // one for every route tried: Match clears it first
  for (const Route& route : routes_) {
    if (!Match(route, target.segments, &p)) continue;
    if (!path_match) path_match = &route;
    if (Serves(route.method, req.method())) {
      if (!*found) {
        *found = &route;
        rr->params = std::move(p);
      }
    } else {
      allow_too(route.method);
      if (route.method == http::verb::get) allow_too(http::verb::head);
    }
  }
  *metrics_route = *found ? (*found)->metrics_route
                          : path_match ? path_match->metrics_route : RequestMetrics::kUnmatched;
  if (!*found) {
    std::string path = "/";  // for the message only
    for (size_t i = 0; i < target.segments.size(); ++i) {
      path += (i ? "/" : "") + target.segments[i];
    }
    if (allow.empty()) return ErrorResponse(ApiError::kNotFound, "no such path: " + path);
    Response res = ErrorResponse(ApiError::kMethodNotAllowed,
                                 std::string(req.method_string()) + " is not allowed on " + path +
                                     "; allowed: " + allow);
    res.set(http::field::allow, allow);
    return res;
  }
  switch (Authorize(*keys_, req[http::field::authorization], (*found)->access, &rr->who)) {
    case AuthVerdict::kAllowed: break;
    case AuthVerdict::kUnauthorized: {
      Response res = ErrorResponse(ApiError::kUnauthorized,
                                   "missing or unknown key; send Authorization: Bearer <key>");
      res.set(http::field::www_authenticate, "Bearer");
      return res;
    }
    case AuthVerdict::kForbidden:
      return ErrorResponse(ApiError::kForbidden, ForbiddenMessage(rr->who.role, (*found)->access));
  }
  rr->query = std::move(target.query);
  return std::nullopt;
}

std::optional<Response> Router::RefuseBeforeBody(const Route& route, const Request& header,
                                                  const Principal& who) {
  if (std::optional<Response> refusal = ContentTypeRefusal(header)) return refusal;
  if (DeclaredBodyBytes(header) > route.options.max_body_bytes) {
    return ErrorResponse(ApiError::kBodyTooLarge,
                         "request body is over the limit of " +
                             std::to_string(route.options.max_body_bytes) +
                             " bytes, the most a valid body of this request can be");
  }
  if (route.options.before_body) return route.options.before_body(who);
  return std::nullopt;
}

Reply Router::Counted(int metrics_route, Reply reply) const {
  if (!metrics_) return reply;
  // Counted when answered, whoever answers and from whichever thread.
  return [metrics = metrics_, metrics_route, inner = std::move(reply)](Response res) {
    metrics->Count(metrics_route, res.result_int());
    inner(std::move(res));
  };
}

Admission Router::Admit(const Request& header) const {
  Admission admission;
  const Route* found = nullptr;
  RouteRequest rr;
  int route = RequestMetrics::kUnmatched;
  std::optional<Response> refusal = Resolve(header, &found, &rr, &route);
  if (!refusal) refusal = RefuseBeforeBody(*found, header, rr.who);
  if (refusal) {
    if (metrics_) metrics_->Count(route, refusal->result_int());
    admission.refusal = std::move(refusal);
    return admission;
  }
  admission.max_body_bytes = found->options.max_body_bytes;
  admission.handler = [this, found, route, rr = std::move(rr)](
                          Request req, Reply reply, ClientGoneWatch watch,
                          ExtendDeadline extend) mutable {
    rr.http = std::move(req);
    rr.watch_client_gone = std::move(watch);
    rr.extend_deadline = std::move(extend);
    found->handler(std::move(rr), Counted(route, std::move(reply)));
  };
  return admission;
}

void Router::Handle(Request req, Reply reply, ClientGoneWatch watch,
                    ExtendDeadline extend) const {
  Admission admission = Admit(req);
  if (admission.refusal) return reply(std::move(*admission.refusal));
  admission.handler(std::move(req), std::move(reply), std::move(watch), std::move(extend));
}

}  // namespace server
