#include "server/api/list_query.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace server {
namespace {

const CursorKey kKey("a secret of this test, 32 bytes or more");

// ParseListPage's out-parameters for the cases that page by a cursor alone
// (no limit given), kept across reads as a handler keeps them.
struct CursorRead {
  int limit = 0;
  std::string after;
  BodyError e;
  // Whether `key` takes `cursor` as one of its own, for the query `fp`.
  bool Read(const std::string& cursor, const CursorKey& key, uint64_t fp) {
    return ParseListPage(nullptr, &cursor, key, fp, &limit, &after, &e);
  }
};

TEST_CASE("list_query: a cursor gives back its key for its own query only") {
  const uint64_t fp = ListFingerprint({"sessions", "acme", "", ""});
  const std::string key("s_\x01\xff key", 9);
  const std::string cursor = MakeCursor(kKey, fp, key);
  CHECK(cursor.rfind("c2.", 0) == 0);
  CursorRead r;
  REQUIRE(r.Read(cursor, kKey, fp));
  CHECK(r.after == key);
  CHECK(r.limit == kDefaultListLimit);
  CHECK_FALSE(r.Read(cursor, kKey, ListFingerprint({"sessions", "bolt", "", ""})));
  CHECK(r.e.code == "invalid_field");
  CHECK(r.e.message.find("another query") != std::string::npos);
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
    REQUIRE(ParseListPage(&s, nullptr, kKey, 1, &limit, &after, &e));
    CHECK(limit == std::stoi(s));
    CHECK(after.empty());
  }
  for (const char* bad : {"0", "1001", "-1", "", "1e3", "10 ", "99999999999999999999"}) {
    INFO(bad);
    const std::string s(bad);
    CHECK_FALSE(ParseListPage(&s, nullptr, kKey, 1, &limit, &after, &e));
    CHECK(e.message.rfind("limit", 0) == 0);
  }
}

TEST_CASE("list_query: a cursor that is not ours is refused, whatever its shape") {
  const uint64_t fp = ListFingerprint({"containers"});
  const std::string good = MakeCursor(kKey, fp, "w-1");
  CursorRead r;
  for (const std::string& bad :
       {std::string(""), std::string("c2."), good.substr(0, good.size() - 1),
        std::string("c1") + good.substr(2), good.substr(0, 19) + "x" + good.substr(20),
        good.substr(0, 5) + "g" + good.substr(6), good + "zz", good.substr(0, 20)}) {
    INFO(bad);
    CHECK_FALSE(r.Read(bad, kKey, fp));
    CHECK(r.e.code == "invalid_field");
    CHECK(r.e.message.rfind("cursor", 0) == 0);
  }
}

// The cursor as a client may take it apart: "c2.", the fingerprint's 16
// hex digits, ".", the key's hex, "." and the signature (absent before cursors
// were signed).
std::string WithKeyHex(const std::string& cursor, const std::string& key_hex) {
  const size_t key_at = 3 + 17;
  const size_t key_end = cursor.find('.', key_at);
  return cursor.substr(0, key_at) + key_hex +
         (key_end == std::string::npos ? "" : cursor.substr(key_end));
}

TEST_CASE("list_query: a cursor altered or made by hand is refused, not paged from") {
  const uint64_t fp = ListFingerprint({"containers"});
  const std::string good = MakeCursor(kKey, fp, "w-1");
  CursorRead r;
  REQUIRE(r.Read(good, kKey, fp));
  // The same cursor with another start ("w-2", hex 772d32): a client paging
  // from where it likes. Refused, with the key's hex as well formed as ours.
  const std::string moved = WithKeyHex(good, "772d32");
  REQUIRE(moved != good);
  CHECK_FALSE(r.Read(moved, kKey, fp));
  CHECK(r.e.code == "invalid_field");
  CHECK(r.e.message.find("not a cursor this server made") != std::string::npos);
  // Made by hand from the parts a client can see (prefix, fingerprint, key),
  // with a made-up signature.
  const std::string forged = good.substr(0, good.rfind('.') + 1) + std::string(32, '0');
  CHECK_FALSE(r.Read(forged, kKey, fp));
  CHECK(r.after.empty());
}

TEST_CASE("list_query: keys of one secret accept each other's cursors, another secret does not") {
  const uint64_t fp = ListFingerprint({"sessions", "acme", "", ""});
  const std::string secret = "shared by the nodes of one database, 32+ bytes";
  const CursorKey node_a(secret), node_b(secret), elsewhere("another secret, also 32 bytes long");
  const std::string cursor = MakeCursor(node_a, fp, "s_42");
  CursorRead r;
  REQUIRE(r.Read(cursor, node_b, fp));
  CHECK(r.after == "s_42");
  CHECK_FALSE(r.Read(cursor, elsewhere, fp));
  CHECK(r.e.message.find("not a cursor this server made") != std::string::npos);
  // Two random keys (two processes without a secret file) differ.
  CursorKey random_a, random_b;
  REQUIRE(CursorKey::Random(&random_a).ok());
  REQUIRE(CursorKey::Random(&random_b).ok());
  const std::string own = MakeCursor(random_a, fp, "s_42");
  CHECK(r.Read(own, random_a, fp));
  CHECK_FALSE(r.Read(own, random_b, fp));
}

TEST_CASE("list_query: a cursor secret file needs 32 bytes, trailing newline aside") {
  testing::TempDir dir;
  const std::string path = dir.File("secret");
  std::ofstream(path) << std::string(31, 'x') << "\n";
  CursorKey key;
  store::Status s = CursorKey::FromFile(path, &key);
  CHECK(s.IsInvalidArgument());
  CHECK(s.ToString().find(path) != std::string::npos);
  std::ofstream(path) << std::string(32, 'x') << "\n";
  REQUIRE(CursorKey::FromFile(path, &key).ok());
  // The newline is not part of the secret: the same key as without it.
  const uint64_t fp = ListFingerprint({"containers"});
  const std::string cursor = MakeCursor(CursorKey(std::string(32, 'x')), fp, "w-1");
  CHECK(CursorRead().Read(cursor, key, fp));
  CHECK(CursorKey::FromFile(dir.File("missing"), &key).IsIOError());
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
