#ifndef EDGEALLOC_SERVER_ROUTER_H_
#define EDGEALLOC_SERVER_ROUTER_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth.h"
#include "server/http_types.h"
#include "server/request_metrics.h"

namespace server {

// One request as a route sees it: authenticated, its path parameters cut out.
struct RouteRequest {
  Request http;
  std::vector<std::string> params;  // the {...} segments of the pattern, decoded, in order
  std::string query;                // after '?', raw
  Principal who;                    // set unless the route is Access::kPublic

  // The decoded value of query parameter `name`; false if absent.
  bool QueryParam(std::string_view name, std::string* value) const;
};

using RouteHandler = std::function<void(RouteRequest, Reply)>;

// A Router is the routing table: (method, pattern) -> who may call it and the
// handler. Later parts add their routes (heartbeats, capacity, metrics,
// dashboard) with Add. Fill it before serving; afterwards it is read only
// and safe from every io thread.
class Router {
 public:
  // `keys` must outlive the Router; an empty KeyStore is open mode. With
  // `metrics`, which must outlive it too, every answer is counted by route
  // pattern and status (edgealloc_http_requests_total).
  explicit Router(const KeyStore* keys, RequestMetrics* metrics = nullptr)
      : keys_(keys), metrics_(metrics) {}

  // Adds a route. A pattern is a path whose segments are literals or `{name}`
  // (one whole segment each), e.g. "/v1/sessions/{id}/renew".
  void Add(http::verb method, std::string pattern, Access access, RouteHandler handler);

  // Answers `req`: 404 not_found for an unknown path, 405 method_not_allowed
  // with Allow for a known path, 401/403 per the route's Access, else the
  // route's handler. Counted under the route's pattern (a 405 under the
  // first pattern that matched the path), or "unmatched" for a 404.
  void Handle(Request req, Reply reply) const;

 private:
  struct Route {
    http::verb method;
    std::vector<std::string> segments;
    Access access;
    RouteHandler handler;
    int metrics_route = RequestMetrics::kUnmatched;
  };
  // True if `path` fits the route; fills *params.
  static bool Match(const Route& route, const std::vector<std::string>& path,
                    std::vector<std::string>* params);

  const KeyStore* keys_;
  RequestMetrics* metrics_;
  std::vector<Route> routes_;
};

// Splits "/a/b%20c/" into {"a", "b c"}: percent-decoded, empty segments dropped.
std::vector<std::string> SplitPath(std::string_view path);
// Decodes %XX (and '+' as space when `plus_is_space`); a malformed % stays as is.
std::string PercentDecode(std::string_view s, bool plus_is_space);

}  // namespace server

#endif  // EDGEALLOC_SERVER_ROUTER_H_
