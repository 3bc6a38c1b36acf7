#ifndef EDGEALLOC_SERVER_HTTP_ROUTER_H_
#define EDGEALLOC_SERVER_HTTP_ROUTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/auth.h"
#include "server/http/message.h"
#include "server/http/request_metrics.h"
#include "server/http/target.h"

namespace server {

// One request as a route sees it: authenticated, its path parameters cut out.
struct RouteRequest {
  Request http;
  std::vector<std::string> params;  // the {...} segments of the pattern, decoded, in order
  std::string query;                // after '?', raw
  Principal who;                    // set unless the route is Access::kPublic
  // The connection's watch for its client's going away; empty without a
  // connection (Service::Handle, router tests).
  ClientGoneWatch watch_client_gone;
  // The connection's hook to move the request's deadline; empty without a
  // connection.
  ExtendDeadline extend_deadline;

  // The decoded value of query parameter `name` ('+' is a space); false if
  // absent or if the query is malformed.
  bool QueryParam(std::string_view name, std::string* value) const;
  // How many times `name` appears in the query.
  int QueryParamCount(std::string_view name) const;
  // The request's id (X-Request-Id, taken from the client or made by the
  // connection before dispatch), for log lines about this request.
  std::string RequestId() const { return std::string(http["X-Request-Id"]); }
  // Starts watching for the client's going away (ClientGoneWatch,
  // message.h): its test, or an empty function without a connection. Only
  // while the handler runs, on its io thread.
  ClientGone WatchClientGone() const {
    return watch_client_gone ? watch_client_gone() : ClientGone();
  }
  // The handler means to wait up to `wait` before it answers (a claim's
  // wait_ms): the request's deadline (--request-deadline-ms) moves by that
  // much, so it is counted from the wait's end. Only while the handler
  // runs, on its io thread.
  void AllowWait(std::chrono::milliseconds wait) const {
    if (extend_deadline) extend_deadline(wait);
  }
};

using RouteHandler = std::function<void(RouteRequest, Reply)>;

// What a route asks of a request before its body is read, beyond its
// caller's key.
struct RouteOptions {
  // The most body a valid request of the route can have: a Content-Length
  // over it is 413 body_too_large before anything else is spent on it (the
  // server's --max-body-bytes holds too).
  uint64_t max_body_bytes = std::numeric_limits<uint64_t>::max();
  // Called once the caller is known and before the body is read; a Response
  // refuses the request (a tenant past its claims_per_s: 429). Once it let
  // a request in, that request reaches the route's handler. May be empty.
  std::function<std::optional<Response>(const Principal& who)> before_body;
};

// A Router is the routing table: (method, pattern) -> who may call it and the
// handler. The route classes of server/api and server/ops add theirs with
// Add. Fill it before serving; afterwards it is read only and safe from every
// io thread.
class Router final : public Admitter {
 public:
  // `keys` must outlive the Router; an empty KeyStore is open mode. With
  // `metrics`, which must outlive it too, every answer is counted by route
  // pattern and status (edgealloc_http_requests_total).
  explicit Router(const KeyStore* keys, RequestMetrics* metrics = nullptr)
      : keys_(keys), metrics_(metrics) {}

  // Adds a route. A pattern is a path whose segments are literals or `{name}`
  // (one whole segment each), e.g. "/v1/sessions/{id}/renew".
  void Add(http::verb method, std::string pattern, Access access, RouteHandler handler,
           RouteOptions options = {});

  // Admits a request on its header alone, before its body is read
  // (HttpServer asks it), refusing in this order: in open mode (no
  // keys) a request for a host that is not loopback or from another origin
  // (403 host_not_allowed, cross_origin: front_rules.h); 400 bad_request for
  // a malformed target, 404 not_found for an unknown path, 405
  // method_not_allowed with Allow for a known path; 401/403 per the route's
  // Access; 415 unsupported_media_type for a body that is not
  // application/json; 413 body_too_large for a Content-Length over the
  // route's max_body_bytes; then the route's before_body. Else the
  // admission's handler runs the route's handler, the body read. A HEAD is
  // admitted by the GET route of its path (the server drops the body).
  // Every answer is counted under the route's pattern (a 405 under the first
  // pattern that matched the path), or "unmatched" for a refusal before a
  // path matched. The route's handler is given `watch` and `extend` in its
  // RouteRequest. Safe from every io thread.
  Admission Admit(const Request& header) const override;

  // Answers a whole request as Admit and its handler would (a body over the
  // route's max_body_bytes: 413): for callers without a connection
  // (Service::Handle, tests).
  void Handle(Request req, Reply reply, ClientGoneWatch watch = {},
              ExtendDeadline extend = {}) const;

 private:
  struct Route {
    http::verb method;
    std::vector<std::string> segments;
    Access access;
    RouteHandler handler;
    RouteOptions options;
    int metrics_route = RequestMetrics::kUnmatched;
  };
  // True if `path` fits the route; fills *params.
  static bool Match(const Route& route, const std::vector<std::string>& path,
                    std::vector<std::string>* params);
  // Finds the route of `req` and checks its caller. Returns the refusal, or
  // nullopt with *found, rr->params, rr->query and rr->who set. Sets
  // *metrics_route either way.
  std::optional<Response> Resolve(const Request& req, const Route** found, RouteRequest* rr,
                                  int* metrics_route) const;
  // The refusals of Admit once the route and caller are known.
  static std::optional<Response> RefuseBeforeBody(const Route& route, const Request& header,
                                                  const Principal& who);
  // The reply that counts the answer under `metrics_route` first.
  Reply Counted(int metrics_route, Reply reply) const;

  const KeyStore* keys_;
  RequestMetrics* metrics_;
  std::vector<Route> routes_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_ROUTER_H_
