#include "server/http/router.h"

#include <catch2/catch.hpp>

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
  KeyStore keys;
  REQUIRE(KeyStore::Parse("t tenant acme\nc container\n", "k", &keys).ok());
  Router router(&keys);
  int calls = 0;
  router.Add(http::verb::get, "/s", Access::kTenant, [&calls](RouteRequest req, Reply reply) {
    ++calls;
    reply(JsonResponse(200, "{}"));
  });
  CHECK(Route(router, Make(http::verb::get, "/s")).result_int() == 401);
  Request req = Make(http::verb::get, "/s");
  req.set(http::field::authorization, "Bearer c");
  CHECK(Route(router, std::move(req)).result_int() == 403);
  req = Make(http::verb::get, "/s");
  req.set(http::field::authorization, "Bearer t");
  CHECK(Route(router, std::move(req)).result_int() == 200);
  CHECK(calls == 1);
}

TEST_CASE("router: Precheck refuses what Handle would refuse, before any handler") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse("t tenant acme\n", "k", &keys).ok());
  Router router(&keys);
  int calls = 0;
  router.Add(http::verb::post, "/v1/things", Access::kTenant, [&calls](RouteRequest, Reply reply) {
    ++calls;
    reply(JsonResponse(200, "{}"));
  });
  Request req = Make(http::verb::post, "/v1/things");
  CHECK(router.Precheck(req)->result_int() == 401);
  req.set(http::field::authorization, "Bearer t");
  CHECK_FALSE(router.Precheck(req).has_value());
  CHECK(router.Precheck(Make(http::verb::post, "/v1/%zz"))->result_int() == 400);
  CHECK(router.Precheck(Make(http::verb::get, "/v1/things"))->result_int() == 405);
  CHECK(calls == 0);
}

}  // namespace
}  // namespace server
