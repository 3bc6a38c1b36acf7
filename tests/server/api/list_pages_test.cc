#include "server/api/list_pages.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/server/service_fixture.h"

namespace server {
namespace {

using fixture::LiveService;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

// `n` copies of a 4-byte UTF-8 character (an emoji), the heaviest a
// character of a label or a container's data can be on the wire.
std::string Emoji(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += "\xF0\x9F\x98\x80";
  return out;
}

// What following next_cursor from `path` read: every page's reply size and
// the ids of every item of `field` (by `id_field`).
struct Walk {
  std::vector<size_t> page_bytes;
  std::vector<std::string> ids;
};

Walk WalkPages(HttpClient& c, const std::string& path, const std::string& field,
               const std::string& id_field) {
  Walk walk;
  std::string cursor;
  for (;;) {
    HttpReply r = c.Get(path + (cursor.empty() ? "" : "&cursor=" + cursor));
    REQUIRE(r.status == 200);
    const json body = json::parse(r.body);
    walk.page_bytes.push_back(r.body.size());
    for (const auto& item : body[field]) walk.ids.push_back(item[id_field].get<std::string>());
    if (body["next_cursor"].is_null()) return walk;
    cursor = body["next_cursor"].get<std::string>();
    REQUIRE(walk.page_bytes.size() < 1000);  // a cursor that never ends the list
  }
}

// Every page at most the budget and one item over it; more than one page;
// each of `want` ids listed exactly once.
void CheckWalk(const Walk& walk, size_t item_bytes, const std::set<std::string>& want) {
  INFO("pages " << walk.page_bytes.size() << ", first " << walk.page_bytes.front() << " bytes");
  CHECK(walk.page_bytes.size() >= 3);
  for (size_t bytes : walk.page_bytes) CHECK(bytes <= kListPageBudgetBytes + 2 * item_bytes);
  CHECK(walk.ids.size() == want.size());
  CHECK(std::set<std::string>(walk.ids.begin(), walk.ids.end()) == want);
}

constexpr int kRows = 300;

// Filling the fleet takes over 30 s under ASan, and no container here
// reports: the reaper must not end them meanwhile.
void NoDeaths(ServeConfig* config) { config->dead_after_ms = 3'600'000; }

TEST_CASE("list pages: sessions with heavy labels page at the byte budget, not at limit=1000, "
          "and following next_cursor lists each once, live and ended") {
  LiveService t(NoDeaths);
  HttpClient c = t.Client();
  fixture::RegisterFleet(c, "s", kRows);
  // 16 labels of 64 + 256 emoji: about 20 KiB a session, 6 MiB for all.
  json labels = json::object();
  for (int i = 0; i < 16; ++i) {
    std::string key = Emoji(62) + std::to_string(10 + i);
    labels[key] = Emoji(256);
  }
  const std::string claim = json{{"region", "weur"}, {"pool", "chrome"}, {"labels", labels}}.dump();
  std::set<std::string> ids;
  std::vector<std::pair<std::string, int64_t>> held;
  for (int i = 0; i < kRows; ++i) {
    HttpReply r = c.Post("/v1/sessions", claim);
    INFO(r.body);
    REQUIRE(r.status == 201);
    const json s = json::parse(r.body);
    ids.insert(s["session_id"].get<std::string>());
    held.emplace_back(s["session_id"].get<std::string>(), s["token"].get<int64_t>());
  }
  // One item as the server writes it (its reply of one, a little over).
  const size_t item_bytes = c.Get("/v1/sessions?limit=1").body.size();
  REQUIRE(item_bytes * kRows > 4 * kListPageBudgetBytes);
  CheckWalk(WalkPages(c, "/v1/sessions?limit=1000", "sessions", "session_id"), item_bytes, ids);

  for (const auto& [id, token] : held) {
    REQUIRE(c.Delete("/v1/sessions/" + id + "?token=" + std::to_string(token)).status == 204);
  }
  CheckWalk(WalkPages(c, "/v1/sessions?state=ended&limit=1000", "sessions", "session_id"),
            item_bytes, ids);
}

TEST_CASE("list pages: containers with heavy data page at the byte budget, not at limit=1000, "
          "and following next_cursor lists each once") {
  LiveService t(NoDeaths);
  HttpClient c = t.Client();
  std::set<std::string> ids;
  // About 20 KiB of data a container, 6 MiB for all, registered 30 a body.
  for (int batch = 0; batch < kRows / 30; ++batch) {
    json list = json::array();
    for (int i = 0; i < 30; ++i) {
      const std::string id = "d-" + std::to_string(batch * 30 + i);
      ids.insert(id);
      list.push_back({{"id", id}, {"region", "weur"}, {"pool", "chrome"},
                      {"data", {{"note", Emoji(5000)}}}});
    }
    REQUIRE(c.Post("/v1/containers", json{{"containers", list}}.dump()).status == 200);
  }
  const size_t item_bytes = c.Get("/v1/containers?limit=1").body.size();
  REQUIRE(item_bytes * kRows > 4 * kListPageBudgetBytes);
  CheckWalk(WalkPages(c, "/v1/containers?limit=1000", "containers", "id"), item_bytes, ids);
}

}  // namespace
}  // namespace server
