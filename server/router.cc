#include "server/router.h"

namespace server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > i) parts.push_back(PercentDecode(path.substr(i, slash - i), false));
    i = slash + 1;
  }
  return parts;
}

bool RouteRequest::QueryParam(std::string_view name, std::string* value) const {
  std::string_view q = query;
  size_t i = 0;
  while (i <= q.size()) {
    size_t amp = q.find('&', i);
    if (amp == std::string_view::npos) amp = q.size();
    std::string_view pair = q.substr(i, amp - i);
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    if (key == name) {
      *value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
      return true;
    }
    i = amp + 1;
  }
  return false;
}

void Router::Add(http::verb method, std::string pattern, Access access, RouteHandler handler) {
  int metrics_route = metrics_ ? metrics_->AddRoute(pattern) : RequestMetrics::kUnmatched;
  routes_.push_back(Route{method, SplitPath(pattern), access, std::move(handler), metrics_route});
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

void Router::Handle(Request req, Reply reply) const {
  std::string_view target = req.target();
  size_t qmark = target.find('?');
  std::string_view path = target.substr(0, qmark);
  std::vector<std::string> parts = SplitPath(path);
  std::vector<std::string> params;
  const Route* found = nullptr;
  const Route* path_match = nullptr;  // for a 405's metrics label
  std::string allow;
  for (const Route& route : routes_) {
    std::vector<std::string> p;
    if (!Match(route, parts, &p)) continue;
    if (!path_match) path_match = &route;
    if (route.method == req.method()) {
      if (!found) {
        found = &route;
        params = std::move(p);
      }
    } else {
      std::string_view name = http::to_string(route.method);
      if (allow.find(name) == std::string::npos) {
        if (!allow.empty()) allow += ", ";
        allow += name;
      }
    }
  }
  if (metrics_) {
    // Counted when answered, whoever answers and from whichever thread.
    const int route = found ? found->metrics_route
                            : path_match ? path_match->metrics_route : RequestMetrics::kUnmatched;
    reply = [metrics = metrics_, route, inner = std::move(reply)](Response res) {
      metrics->Count(route, res.result_int());
      inner(std::move(res));
    };
  }
  if (!found) {
    if (allow.empty()) {
      return reply(ErrorResponse(404, "not_found", "no such path: " + std::string(path)));
    }
    Response res = ErrorResponse(405, "method_not_allowed",
                                 std::string(req.method_string()) + " is not allowed on " +
                                     std::string(path) + "; allowed: " + allow);
    res.set(http::field::allow, allow);
    return reply(std::move(res));
  }
  RouteRequest rr;
  switch (Authorize(*keys_, req[http::field::authorization], found->access, &rr.who)) {
    case AuthVerdict::kAllowed: break;
    case AuthVerdict::kUnauthorized: {
      Response res = ErrorResponse(401, "unauthorized",
                                   "missing or unknown key; send Authorization: Bearer <key>");
      res.set(http::field::www_authenticate, "Bearer");
      return reply(std::move(res));
    }
    case AuthVerdict::kForbidden:
      return reply(ErrorResponse(403, "forbidden", "this key's role may not do this"));
  }
  if (qmark != std::string_view::npos) rr.query = std::string(target.substr(qmark + 1));
  rr.params = std::move(params);
  rr.http = std::move(req);
  found->handler(std::move(rr), std::move(reply));
}

}  // namespace server
