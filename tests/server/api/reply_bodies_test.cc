#include "server/api/reply_bodies.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "store/row_columns.h"

namespace server {
namespace {

TEST_CASE("json_io: the session reply splices data in without re-parsing it") {
  store::Session s;
  s.session_id = "s_1";
  s.container_id = "c\"1";
  s.region = "weur";
  s.pool = "chrome";
  s.tenant = "acme";
  s.token = 42;
  s.lease_expires_at_ms = 7;
  s.data = R"({"a":[1,2]})";
  CHECK(SessionJson(s) ==
        R"({"session_id":"s_1","container_id":"c\"1","region":"weur","pool":"chrome",)"
        R"("tenant":"acme","token":42,"slot":0,"lease_expires_at_ms":7,"data":{"a":[1,2]},"labels":{}})");
  s.labels = R"({"owner":"ci-42"})";
  CHECK(SessionJson(s).find(R"("labels":{"owner":"ci-42"}})") != std::string::npos);
}

// ---- The replies and the OpenAPI schemas against the rows' description ----

using nlohmann::json;

// A row with every described field set, each text to JSON object text of
// its own (a reply quotes it, or splices it in if it is JSON), each number
// to its own, each flag to `flags`.
template <typename Row, size_t N>
Row Filled(const store::Column<Row> (&columns)[N], bool flags) {
  Row row;
  int64_t number = 1000;
  for (const auto& c : columns) {
    if (c.number != nullptr) {
      row.*c.number = ++number;
    } else if (c.flag != nullptr) {
      row.*c.flag = flags;
    } else if (c.maybe != nullptr) {
      row.*c.maybe = std::string("m-") + c.name;
    } else {
      row.*c.text = std::string(R"({"column":")") + c.name + "\"}";
    }
  }
  return row;
}

// The JSON names of the columns a reply shows, and `more` (the reply's own).
template <typename Row, size_t N>
std::set<std::string> Shown(const store::Column<Row> (&columns)[N],
                            std::set<std::string> more = {}) {
  for (const auto& c : columns) {
    if (*c.json != '\0') more.insert(c.json);
  }
  return more;
}

// "" if `have` is `want`, else what one has and the other lacks.
std::string Differences(const std::set<std::string>& have, const std::set<std::string>& want) {
  std::string out;
  for (const auto& w : want) {
    if (have.count(w) == 0) out += " missing " + w;
  }
  for (const auto& h : have) {
    if (want.count(h) == 0) out += " not described " + h;
  }
  return out;
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

// Checks that `reply` shows each described column of `row` under its JSON
// name with the row's value, and nothing else but `more`.
template <typename Row, size_t N>
void CheckReply(const store::Column<Row> (&columns)[N], const Row& row, const json& reply,
                const std::set<std::string>& more = {}) {
  INFO(reply.dump());
  CHECK(Differences(Keys(reply), Shown(columns, more)) == "");
  for (const auto& c : columns) {
    if (*c.json == '\0' || !reply.contains(c.json)) continue;
    INFO("column " << c.name << " as " << c.json);
    const json& value = reply[c.json];
    if (c.number != nullptr) {
      CHECK(value == row.*c.number);
    } else if (c.flag != nullptr) {
      CHECK(value == row.*c.flag);
    } else if (c.maybe != nullptr) {
      CHECK(value == *(row.*c.maybe));
    } else {
      CHECK((value == row.*c.text || value == json::parse(row.*c.text)));
    }
  }
}

TEST_CASE("reply bodies: a session and a container show each described column by its JSON name") {
  for (bool flags : {true, false}) {
    const auto session = Filled(store::kSessionColumns, flags);
    CheckReply(store::kSessionColumns, session, json::parse(SessionJson(session)));
    store::EndedSession ended{session, {"expired", 77}};
    CheckReply(store::kSessionColumns, session, json::parse(EndedSessionJson(ended)),
               {"end_reason", "ended_at_ms"});
    const auto container = Filled(store::kContainerColumns, flags);
    CheckReply(store::kContainerColumns, container, json::parse(ContainerJson(container)));
  }
}

// The OpenAPI schema of each reply names the same fields, and requires
// each but those a reply may leave out (a container's session_id).
TEST_CASE("reply bodies: docs/openapi.json's schemas name each described column's JSON name") {
  std::ifstream in(EDGEALLOC_OPENAPI_JSON);
  REQUIRE(in.good());
  const json schemas = json::parse(in)["components"]["schemas"];
  auto check = [&](const auto& columns, const char* name, std::set<std::string> more) {
    INFO("components.schemas." << name);
    const json& schema = schemas.at(name);
    CHECK(Differences(Keys(schema["properties"]), Shown(columns, more)) == "");
    std::set<std::string> required(schema["required"].begin(), schema["required"].end());
    for (const auto& c : columns) {
      if (*c.json != '\0' && c.maybe == nullptr) CHECK(required.count(c.json) == 1);
    }
  };
  check(store::kSessionColumns, "Session", {"served_by"});  // a 201's alone
  check(store::kSessionColumns, "EndedSession", {"end_reason", "ended_at_ms"});
  check(store::kContainerColumns, "Container", {});
}

}  // namespace
}  // namespace server
