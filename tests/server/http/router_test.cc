#include "server/http/router.h"

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>

namespace server {
namespace {

Request Make(http::verb method, const std::string& target) {
  Request req{method, target, 11};
  return req;
}

// Runs the router and returns the (synchronous) response.
Response Route(const Router& router, Request req) {
  Response out;
  router.Handle(std::move(req), [&out](Response res) { out = std::move(res); });
  return out;
}

// The cases with keys: a keys file of `text` ("t" is a key of tenant acme).
KeyStore Keys(const std::string& text = "t tenant acme\n") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse(text, "k", &keys).ok());
  return keys;
}

// A handler that answers 200 and counts its calls, to show whether a
// refusal came before it.
RouteHandler CountingOk(int* calls) {
  return [calls](RouteRequest, Reply reply) {
    ++*calls;
    reply(JsonResponse(200, "{}"));
  };
}

// `method` `target` with `key` as its bearer key.
Request WithKey(http::verb method, const std::string& target, const std::string& key) {
  Request req = Make(method, target);
  req.set(http::field::authorization, "Bearer " + key);
  return req;
}

TEST_CASE("router: an unknown path is 404 and a wrong method is 405 with Allow") {
  KeyStore open;
  Router router(&open);
  router.Add(http::verb::get, "/v1/things/{id}", Access::kPublic,
             [](RouteRequest, Reply reply) { reply(JsonResponse(200, "{}")); });
  router.Add(http::verb::delete_, "/v1/things/{id}", Access::kPublic,
             [](RouteRequest, Reply reply) { reply(JsonResponse(204, "")); });
  CHECK(Route(router, Make(http::verb::get, "/v1/nowhere")).result_int() == 404);
  Response res = Route(router, Make(http::verb::put, "/v1/things/a"));
  CHECK(res.result_int() == 405);
  CHECK(res[http::field::allow] == "GET, HEAD, DELETE");
  CHECK(res.body().find("method_not_allowed") != std::string::npos);
}

TEST_CASE("router: path parameters are decoded and the query is kept") {
  KeyStore open;
  Router router(&open);
  RouteRequest seen;
  router.Add(http::verb::get, "/v1/things/{id}/x", Access::kTenant,
             [&seen](RouteRequest req, Reply reply) {
               seen = std::move(req);
               reply(JsonResponse(200, "{}"));
             });
  CHECK(Route(router, Make(http::verb::get, "/v1/things/a%20b/x?token=4%32&q")).result_int() ==
        200);
  REQUIRE(seen.params.size() == 1);
  CHECK(seen.params[0] == "a b");
  std::string v;
  CHECK(seen.QueryParam("token", &v));
  CHECK(v == "42");
  CHECK(seen.QueryParam("q", &v));
  CHECK(v.empty());
  CHECK_FALSE(seen.QueryParam("missing", &v));
  CHECK(seen.who.role == Role::kAdmin);  // open mode
}

TEST_CASE("router: with keys, a route checks the caller before its handler runs") {
  const KeyStore keys = Keys("t tenant acme\nc container\n");
  Router router(&keys);
  int calls = 0;
  router.Add(http::verb::get, "/s", Access::kTenant, CountingOk(&calls));
  CHECK(Route(router, Make(http::verb::get, "/s")).result_int() == 401);
  Response forbidden = Route(router, WithKey(http::verb::get, "/s", "c"));
  CHECK(forbidden.result_int() == 403);
  // The refusal names the key's role and the roles the route takes.
  CHECK_THAT(forbidden.body(), Catch::Contains("a container key may not do this; it needs a "
                                               "tenant or admin key"));
  CHECK(Route(router, WithKey(http::verb::get, "/s", "t")).result_int() == 200);
  CHECK(calls == 1);
}

TEST_CASE("router: Admit refuses what Handle would refuse, before any handler") {
  const KeyStore keys = Keys();
  Router router(&keys);
  int calls = 0;
  router.Add(http::verb::post, "/v1/things", Access::kTenant, CountingOk(&calls));
  CHECK(router.Admit(Make(http::verb::post, "/v1/things")).refusal->result_int() == 401);
  const Request req = WithKey(http::verb::post, "/v1/things", "t");
  CHECK_FALSE(router.Admit(req).refusal.has_value());
  CHECK(router.Admit(Make(http::verb::post, "/v1/%zz")).refusal->result_int() == 400);
  CHECK(router.Admit(Make(http::verb::get, "/v1/things")).refusal->result_int() == 405);
  CHECK(calls == 0);
  // Let in, its handler is the route's.
  Admission admitted = router.Admit(req);
  REQUIRE(admitted.handler);
  Response got;
  admitted.handler(req, [&got](Response res) { got = std::move(res); }, {}, {});
  CHECK(got.result_int() == 200);
  CHECK(calls == 1);
}

// A route's bound and its before_body hook run on the header alone, after the
// key and the Content-Type, so that a refused request's body is never read.
TEST_CASE("router: a route's body bound and before_body refuse on the header, in order") {
  const KeyStore keys = Keys();
  Router router(&keys);
  int hooks = 0;
  RouteOptions options;
  options.max_body_bytes = 100;
  options.before_body = [&hooks](const Principal& who) -> std::optional<Response> {
    ++hooks;
    if (who.tenant == "acme" && hooks > 1) return ErrorResponse(ApiError::kRateLimited, "slow");
    return std::nullopt;
  };
  router.Add(http::verb::post, "/v1/things", Access::kTenant,
             [](RouteRequest, Reply reply) { reply(JsonResponse(200, "{}")); }, options);
  auto header = [](const std::string& length, const std::string& type) {
    Request req = Make(http::verb::post, "/v1/things");
    req.set(http::field::content_length, length);
    if (!type.empty()) req.set(http::field::content_type, type);
    return req;
  };
  CHECK(router.Admit(header("5000000", "application/json")).refusal->result_int() == 401);
  Request keyed = header("101", "application/json");
  keyed.set(http::field::authorization, "Bearer t");
  CHECK(router.Admit(keyed).refusal->result_int() == 413);
  keyed.set(http::field::content_type, "text/plain");
  CHECK(router.Admit(keyed).refusal->result_int() == 415);
  CHECK(hooks == 0);
  keyed.set(http::field::content_length, "100");
  keyed.set(http::field::content_type, "Application/JSON; charset=utf-8");
  Admission first = router.Admit(keyed);
  CHECK_FALSE(first.refusal.has_value());
  CHECK(first.max_body_bytes == 100);
  CHECK(router.Admit(keyed).refusal->result_int() == 429);
  CHECK(hooks == 2);
}

TEST_CASE("router: a body must be application/json in every mode, no body needs no type") {
  KeyStore open;
  Router router(&open);
  router.Add(http::verb::post, "/v1/things", Access::kTenant,
             [](RouteRequest, Reply reply) { reply(JsonResponse(200, "{}")); });
  Request req = Make(http::verb::post, "/v1/things");
  CHECK(Route(router, req).result_int() == 200);  // no body: no Content-Type needed
  req.body() = "{}";
  Response res = Route(router, req);
  CHECK(res.result_int() == 415);
  CHECK(res.body().find("unsupported_media_type") != std::string::npos);
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonx"}) {
    INFO(type);
    req.set(http::field::content_type, type);
    CHECK(Route(router, req).result_int() == 415);
  }
  req.set(http::field::content_type, "application/json;charset=utf-8");
  CHECK(Route(router, req).result_int() == 200);
}

TEST_CASE("router: in open mode a foreign Host or another origin is 403, with keys it is not") {
  KeyStore open;
  Router router(&open);
  router.Add(http::verb::get, "/v1/things", Access::kTenant,
             [](RouteRequest, Reply reply) { reply(JsonResponse(200, "{}")); });
  auto with = [](std::map<std::string, std::string> fields) {
    Request req = Make(http::verb::get, "/v1/things");
    for (const auto& [name, value] : fields) req.set(name, value);
    return req;
  };
  auto code = [&router](const Request& req) { return Route(router, req).body(); };
  CHECK(Route(router, with({{"Host", "evil.example"}})).result_int() == 403);
  CHECK(code(with({{"Host", "evil.example"}})).find("host_not_allowed") != std::string::npos);
  CHECK(Route(router, with({{"Host", "127.0.0.1:8080"}})).result_int() == 200);
  CHECK(Route(router, with({{"Host", "localhost:8080"}, {"Origin", "http://evil.example"}}))
            .result_int() == 403);
  CHECK(code(with({{"Host", "localhost"}, {"Origin", "null"}})).find("cross_origin") !=
        std::string::npos);
  CHECK(Route(router, with({{"Host", "localhost:8080"}, {"Origin", "http://localhost:3000"}}))
            .result_int() == 403);
  // The dashboard's own POSTs carry its origin: the server's.
  CHECK(Route(router, with({{"Host", "localhost:8080"}, {"Origin", "http://localhost:8080"}}))
            .result_int() == 200);
  CHECK(Route(router, with({{"Host", "[::1]:80"}, {"Sec-Fetch-Site", "cross-site"}}))
            .result_int() == 403);
  CHECK(Route(router, with({{"Host", "[::1]:80"}, {"Sec-Fetch-Site", "same-origin"}}))
            .result_int() == 200);
  // With keys a key decides, and the server may be served under any name.
  const KeyStore keys = Keys();
  Router keyed(&keys);
  keyed.Add(http::verb::get, "/v1/things", Access::kTenant,
            [](RouteRequest, Reply reply) { reply(JsonResponse(200, "{}")); });
  Request req = with({{"Host", "alloc.example"}, {"Origin", "http://evil.example"},
                      {"Authorization", "Bearer t"}});
  CHECK(Route(keyed, req).result_int() == 200);
}

}  // namespace
}  // namespace server
