#include "server/api/errors.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace server {
namespace {

using store::Outcome;
using nlohmann::json;

TEST_CASE("errors: every allocator outcome maps to the status and code of API.md") {
  CHECK(HttpStatusOf(Outcome::kNoCapacity).status == 503);
  CHECK(std::string(HttpStatusOf(Outcome::kNoCapacity).code) == "no_capacity");
  CHECK(HttpStatusOf(Outcome::kQuotaExceeded).status == 429);
  CHECK(std::string(HttpStatusOf(Outcome::kQuotaExceeded).code) == "quota_exceeded");
  CHECK(HttpStatusOf(Outcome::kStaleToken).status == 409);
  CHECK(std::string(HttpStatusOf(Outcome::kStaleToken).code) == "stale_token");
  CHECK(HttpStatusOf(Outcome::kConflict).status == 409);
  CHECK(std::string(HttpStatusOf(Outcome::kConflict).code) == "conflict");
  CHECK(HttpStatusOf(Outcome::kNotFound).status == 404);
  CHECK(HttpStatusOf(Outcome::kForbidden).status == 403);
  CHECK(HttpStatusOf(Outcome::kOverloaded).status == 503);
  CHECK(std::string(HttpStatusOf(Outcome::kOverloaded).code) == "overloaded");
}

TEST_CASE("errors: a storage error is a retryable 503, never a 500") {
  CHECK(HttpStatusOf(Outcome::kError).status == 503);
}

TEST_CASE("routes: the outcome table gives each error its JSON body") {
  Response r = OutcomeResponse(store::Outcome::kNoCapacity, "none left", "req-1");
  CHECK(r.result_int() == 503);
  CHECK(r[http::field::retry_after] == "1");
  CHECK(json::parse(r.body())["error"]["code"] == "no_capacity");
}

}  // namespace
}  // namespace server
