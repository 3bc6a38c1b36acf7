#include "server/api/errors.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

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

// The (status, code) rows of docs/api.md's error table: the table under the
// header "| status | code | when |", up to its first line that is not a row.
std::set<std::pair<int, std::string>> DocumentedErrors() {
  std::ifstream in(EDGEALLOC_API_MD);
  REQUIRE(in.good());
  std::set<std::pair<int, std::string>> rows;
  const std::regex row(R"(^\| (\d{3}) \| `([a-z_]+)` \|.*)");
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("| status | code | when |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_match(line, m, row)) break;
    rows.emplace(std::stoi(m[1].str()), m[2].str());
  }
  return rows;
}

TEST_CASE("errors: docs/api.md's error table and the code's table hold the same rows") {
  const std::set<std::pair<int, std::string>> documented = DocumentedErrors();
  std::set<std::pair<int, std::string>> coded;
  for (const ErrorRow& row : kErrorTable) coded.emplace(row.status, row.code);
  for (const auto& [status, code] : documented) {
    INFO("docs/api.md: " << status << " " << code);
    CHECK(coded.contains({status, code}));
  }
  for (const auto& [status, code] : coded) {
    INFO("error_table.h: " << status << " " << code);
    CHECK(documented.contains({status, code}));
  }
  CHECK(coded.size() == std::size(kErrorTable));  // no code twice
}

TEST_CASE("errors: the OpenAPI document's error codes are the code's table") {
  std::ifstream in(EDGEALLOC_OPENAPI_JSON);
  REQUIRE(in.good());
  const json doc = json::parse(in);
  std::set<std::string> documented;
  for (const json& code :
       doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]) {
    documented.insert(code.get<std::string>());
  }
  std::set<std::string> coded;
  for (const ErrorRow& row : kErrorTable) coded.insert(std::string(row.code));
  for (const std::string& code : documented) {
    INFO("docs/openapi.json: " << code);
    CHECK(coded.contains(code));
  }
  for (const std::string& code : coded) {
    INFO("error_table.h: " << code);
    CHECK(documented.contains(code));
  }
}

TEST_CASE("errors: every error code is in the table once, and every outcome has a row") {
  for (const ErrorRow& row : kErrorTable) {
    INFO(row.code);
    REQUIRE(RowOfCode(row.code) != nullptr);
    CHECK(RowOfCode(row.code)->error == row.error);
    CHECK(&RowOf(row.error) == &row);
  }
  CHECK(RowOfCode("no_such_code") == nullptr);
  using store::Outcome;
  for (Outcome o : {Outcome::kNoCapacity, Outcome::kQuotaExceeded, Outcome::kStaleToken,
                    Outcome::kNotFound, Outcome::kForbidden, Outcome::kConflict,
                    Outcome::kOverloaded, Outcome::kError, Outcome::kNoMatch}) {
    const HttpStatus st = HttpStatusOf(o);
    INFO(st.code);
    REQUIRE(RowOfCode(st.code) != nullptr);
    CHECK(RowOfCode(st.code)->status == st.status);
  }
}

TEST_CASE("errors: a fixed refusal is its row's status and code with its own words") {
  Response r = RefusalResponse(kOwnSessionsOnly);
  CHECK(r.result_int() == 403);
  CHECK(json::parse(r.body())["error"]["code"] == "forbidden");
  CHECK(json::parse(r.body())["error"]["message"] == "a tenant key lists its own sessions only");
  Response stopping = RefusalResponse(SubmitRefusal(batcher::SubmitResult::Code::kStopping));
  CHECK(stopping.result_int() == 503);
  CHECK(stopping[http::field::retry_after] == "1");
  CHECK(json::parse(stopping.body())["error"]["code"] == "unavailable");
  CHECK(json::parse(RefusalResponse(SubmitRefusal(batcher::SubmitResult::Code::kOverloaded))
                        .body())["error"]["code"] == "overloaded");
}

}  // namespace
}  // namespace server
