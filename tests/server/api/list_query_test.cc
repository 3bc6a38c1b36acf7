#include "server/api/list_query.h"

#include <catch2/catch.hpp>

#include <string>

namespace server {
namespace {

TEST_CASE("list_query: a cursor gives back its key for its own query only") {
  const uint64_t fp = ListFingerprint({"sessions", "acme", "", ""});
  const std::string key("s_\x01\xff key", 9);
  const std::string cursor = MakeCursor(fp, key);
  CHECK(cursor.rfind("c1.", 0) == 0);
  int limit = 0;
  std::string after;
  BodyError e;
  REQUIRE(ParseListPage(nullptr, &cursor, fp, &limit, &after, &e));
  CHECK(after == key);
  CHECK(limit == kDefaultListLimit);
  CHECK_FALSE(ParseListPage(nullptr, &cursor, ListFingerprint({"sessions", "bolt", "", ""}),
                            &limit, &after, &e));
  CHECK(e.code == "invalid_field");
  CHECK(e.message.find("another query") != std::string::npos);
}

TEST_CASE("list_query: fingerprints tell apart filters that concatenate alike") {
  CHECK(ListFingerprint({"sessions", "ab", "c"}) != ListFingerprint({"sessions", "a", "bc"}));
  CHECK(ListFingerprint({"sessions", "", "x"}) != ListFingerprint({"sessions", "x", ""}));
  CHECK(ListFingerprint({"containers"}) == ListFingerprint({"containers"}));
}

TEST_CASE("list_query: limits from 1 to 1000, anything else invalid_field naming limit") {
  int limit = 0;
  std::string after;
  BodyError e;
  for (const char* ok : {"1", "1000", "37"}) {
    const std::string s(ok);
    REQUIRE(ParseListPage(&s, nullptr, 1, &limit, &after, &e));
    CHECK(limit == std::stoi(s));
    CHECK(after.empty());
  }
  for (const char* bad : {"0", "1001", "-1", "", "1e3", "10 ", "99999999999999999999"}) {
    INFO(bad);
    const std::string s(bad);
    CHECK_FALSE(ParseListPage(&s, nullptr, 1, &limit, &after, &e));
    CHECK(e.message.rfind("limit", 0) == 0);
  }
}

TEST_CASE("list_query: a cursor that is not ours is refused, whatever its shape") {
  const uint64_t fp = ListFingerprint({"containers"});
  const std::string good = MakeCursor(fp, "w-1");
  int limit = 0;
  std::string after;
  BodyError e;
  for (const std::string& bad :
       {std::string(""), std::string("c1."), good.substr(0, good.size() - 1),
        std::string("c2") + good.substr(2), good.substr(0, 19) + "x" + good.substr(20),
        good.substr(0, 5) + "g" + good.substr(6), good + "zz", good.substr(0, 20)}) {
    INFO(bad);
    CHECK_FALSE(ParseListPage(nullptr, &bad, fp, &limit, &after, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind("cursor", 0) == 0);
  }
}

TEST_CASE("list_query: a label filter is KEY:VALUE split at the first colon") {
  std::string k, v;
  BodyError e;
  REQUIRE(ParseLabelFilter("owner:ci:42", &k, &v, &e));
  CHECK(k == "owner");
  CHECK(v == "ci:42");
  REQUIRE(ParseLabelFilter("owner:", &k, &v, &e));
  CHECK(v.empty());
  CHECK_FALSE(ParseLabelFilter("owner", &k, &v, &e));
  CHECK_FALSE(ParseLabelFilter(":v", &k, &v, &e));
  CHECK_FALSE(ParseLabelFilter(std::string(65, 'k') + ":v", &k, &v, &e));
  CHECK_FALSE(ParseLabelFilter("k:" + std::string(257, 'v'), &k, &v, &e));
  CHECK(e.message.rfind("label", 0) == 0);
}

TEST_CASE("list_query: a label filter with U+0000 in its key or value is invalid_field") {
  // As a claim refuses such labels: PostgreSQL text cannot hold NUL.
  std::string k, v;
  for (std::string bad : {std::string("k:a\0b", 5), std::string("k\0:v", 4),
                          std::string("k:\0", 3)}) {
    BodyError e;
    CHECK_FALSE(ParseLabelFilter(bad, &k, &v, &e));
    CHECK(e.code == "invalid_field");
    CHECK(e.message.rfind("label", 0) == 0);
    CHECK(e.message.find("U+0000") != std::string::npos);
  }
}

}  // namespace
}  // namespace server
