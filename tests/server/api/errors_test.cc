#include "server/api/errors.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace server {
namespace {

using store::Outcome;
using nlohmann::json;

TEST_CASE("errors: every allocator outcome maps to the status and code of docs/api.md") {
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

TEST_CASE("errors: a storage failure's text goes to the log, the client gets a plain message") {
  const std::string libpq =
      "connection to server at \"db-7.internal\" (10.1.2.3), port 5433 failed: Connection refused";
  for (store::Outcome outcome : {store::Outcome::kError, store::Outcome::kOverloaded}) {
    Response r = OutcomeResponse(outcome, libpq, "req-42");
    CHECK(r.result_int() == 503);
    CHECK(r[http::field::retry_after] == "1");
    const std::string message = json::parse(r.body())["error"]["message"];
    INFO(message);
    CHECK(message.find("db-7") == std::string::npos);  // before the fix: libpq's text
    CHECK(message.find("5433") == std::string::npos);
    CHECK(message.find("10.1.2.3") == std::string::npos);
    CHECK(message.find("req-42") != std::string::npos);  // what finds the log line
  }
  CHECK(json::parse(OutcomeResponse(store::Outcome::kError, libpq, "r").body())["error"]["code"] ==
        "unavailable");
  // Messages of our own words are kept.
  CHECK(json::parse(OutcomeResponse(store::Outcome::kNoCapacity, "none left", "r").body())
            ["error"]["message"] == "none left");
}

}  // namespace
}  // namespace server
