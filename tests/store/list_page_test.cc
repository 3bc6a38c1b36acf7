// A list page ends at a byte budget in the storage (store/list_page.h),
// every engine: rows with their labels or data at the API's limit make a
// page of far fewer than `limit` items, paging on from where each page says
// lists every row exactly once, and each engine reads no row past the one
// that reaches the budget (SQLite's walk, PostgreSQL's statement).
#include "store/list_page.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/postgres/pg.h"
#include "store/postgres/session_sql.h"
#include "store/sqlite/db.h"
#include "store/sqlite/list_sql.h"
#include "store/sqlite/rows.h"
#include "store/storage.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using testing::Await;
using testing::Engine;

constexpr int kLimit = 1000;           // the API's largest page
constexpr size_t kBudget = 100 * 1000;  // about five of these rows
constexpr int kRows = 24;               // five pages or so
const std::vector<std::string> kRegions = {"weur", "eeur", "wnam"};  // a shard each, sharded

std::string Emoji(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "\xF0\x9F\x98\x80";  // U+1F600, 4 bytes
  return s;
}

// A claim's labels at their limit (16 labels, keys of 64 characters and
// values of 256), each character 4 bytes: about 20 KB of text.
std::string HeavyLabels() {
  std::string json = "{";
  for (int i = 0; i < 16; ++i) {
    if (i > 0) json += ",";
    json += "\"" + std::to_string(10 + i) + Emoji(62) + "\":\"" + Emoji(256) + "\"";
  }
  return json + "}";
}

// One call of a list: a page of rows after `after`, and where the next starts.
template <typename Row>
using ListFn = std::function<store::Status(const std::string& after, std::vector<Row>* page,
                                           std::string* next_after)>;

// Pages through a list as a client follows its cursors; each page must end
// at the row that brings it to kBudget (none before it does), unless it is
// the last. Returns how many times each key was listed.
template <typename Row>
std::map<std::string, int> PageThrough(const ListFn<Row>& list, int* pages) {
  std::map<std::string, int> seen;
  std::string after;
  for (*pages = 1;; ++*pages) {
    REQUIRE(*pages <= kRows + 1);  // every page moves on
    std::vector<Row> page;
    std::string next;
    store::Status st = list(after, &page, &next);
    INFO(st.ToString());
    REQUIRE(st.ok());
    size_t bytes = 0, before_last = 0;
    for (const Row& row : page) {
      before_last = bytes;
      bytes += store::ListRowBytes(row);
      ++seen[store::ListKey(row)];
    }
    INFO("page " << *pages << ": " << page.size() << " rows, " << bytes << " bytes");
    CHECK(page.size() < static_cast<size_t>(kLimit));
    CHECK(before_last < kBudget);  // before the fix: every row on one page
    if (next.empty()) return seen;
    REQUIRE(!page.empty());
    CHECK(bytes >= kBudget);
    CHECK(next == store::ListKey(page.back()));  // resumes right after its last row
    after = next;
  }
}

// Pages through a list of kRows rows, the storage's `list` of `filter` with
// kBudget, kLimit rows at most a page (PageThrough), and checks that it took
// at least 4 pages and listed each of `keys` once.
template <typename Row, typename Filter>
void CheckPagedOnce(store::Storage* storage,
                    store::Status (store::Storage::*list)(const Filter&, const std::string&, int,
                                                          std::vector<Row>*, std::string*),
                    Filter filter, const std::vector<std::string>& keys) {
  filter.page_budget_bytes = kBudget;
  int pages = 0;
  auto seen = PageThrough<Row>(
      [&](const std::string& after, std::vector<Row>* page, std::string* next) {
        return (storage->*list)(filter, after, kLimit, page, next);
      },
      &pages);
  CHECK(seen.size() == static_cast<size_t>(kRows));
  for (const std::string& key : keys) CHECK(seen[key] == 1);
  CHECK(pages >= 4);
}

std::vector<std::string> SessionIds(const std::vector<store::Session>& sessions) {
  std::vector<std::string> ids;
  for (const auto& s : sessions) ids.push_back(s.session_id);
  return ids;
}

// Registers kRows containers whose data is about 20 KB and claims each,
// with HeavyLabels: the sessions, and the containers' specs in *specs.
std::vector<store::Session> ClaimHeavy(Engine& e, std::vector<store::ContainerSpec>* specs) {
  const std::string heavy_data = "{\"blob\":\"" + Emoji(5000) + "\"}";
  for (int i = 0; i < kRows; ++i) {
    specs->push_back(testing::Spec("c" + std::to_string(100 + i), kRegions[i % kRegions.size()],
                                   "p", 0, heavy_data));
  }
  auto registered = Await<store::ContainerResult>([&](auto cb) { e->Register(*specs, cb); });
  INFO(registered.message);
  REQUIRE(registered.outcome == Outcome::kOk);
  std::vector<store::Session> claimed;
  for (int i = 0; i < kRows; ++i) {
    store::ClaimRequest req = testing::Req(kRegions[i % kRegions.size()], "t1", "p");
    req.lease_ms = 600000;
    req.labels = HeavyLabels();
    auto c = Await<store::SessionResult>([&](auto cb) { e->Claim(std::move(req), cb); });
    INFO(c.message);
    REQUIRE(c.outcome == Outcome::kOk);
    claimed.push_back(c.session);
  }
  REQUIRE(store::ListRowBytes(claimed[0]) > kBudget / 6);  // byte-heavy indeed
  return claimed;
}

}  // namespace

TEST_CASE("list pages: rows with labels or data at their limit end a page at its byte budget, "
          "and paging on lists each row once") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  std::vector<store::ContainerSpec> specs;
  const std::vector<store::Session> claimed = ClaimHeavy(e, &specs);

  SECTION("live sessions, every tenant's and one tenant's") {
    for (const std::string tenant : {"", "t1"}) {
      store::SessionFilter filter;
      filter.tenant = tenant;
      CheckPagedOnce(e.storage.get(), &store::Storage::ListSessions, filter, SessionIds(claimed));
    }
  }
  SECTION("containers") {
    std::vector<std::string> ids;
    for (const auto& s : specs) ids.push_back(s.id);
    CheckPagedOnce(e.storage.get(), &store::Storage::ListContainers, store::ContainerFilter{}, ids);
  }
  SECTION("ended sessions, newest first") {
    for (const auto& s : claimed) {
      auto r = Await<store::SessionResult>([&](auto cb) {
        e->Release(testing::Tenant("t1"), s.session_id, s.token, cb);
      });
      REQUIRE(r.outcome == Outcome::kOk);
    }
    CheckPagedOnce(e.storage.get(), &store::Storage::ListEndedSessions, store::SessionFilter{},
                   SessionIds(claimed));
  }
  SECTION("without a budget a page ends by count alone") {
    std::vector<store::Session> page;
    std::string next;
    REQUIRE(e->ListSessions({}, "", kLimit, &page, &next).ok());
    CHECK(page.size() == static_cast<size_t>(kRows));
    CHECK(next.empty());
  }
}

namespace {

// The rows of a page that reach kBudget, in key order: how many a walk that
// stops there reads.
size_t RowsToBudget(std::vector<store::Session> sessions) {
  std::sort(sessions.begin(), sessions.end(),
            [](const auto& a, const auto& b) { return a.session_id < b.session_id; });
  size_t bytes = 0;
  for (size_t i = 0; i < sessions.size(); ++i) {
    bytes += store::ListRowBytes(sessions[i]);
    if (bytes >= kBudget) return i + 1;
  }
  return sessions.size();
}

}  // namespace

TEST_CASE("list pages: an engine reads no row past the one that brings the page to its budget") {
  Engine e(EDGEALLOC_ENGINES);
  std::vector<store::ContainerSpec> specs;
  const std::vector<store::Session> claimed = ClaimHeavy(e, &specs);
  const size_t wanted = RowsToBudget(claimed);
  REQUIRE(wanted < claimed.size());
  const store::PageBounds bounds{kLimit, store::ListExamineBound(kLimit), kBudget};
  if (e.engine == "sqlite") {
    // SQLite steps the list statement row by row (store/sqlite/rows.h).
    std::unique_ptr<store::Db> db;
    store::DbOptions options;
    options.read_only = true;
    REQUIRE(store::Db::Open(e.db, options, &db).ok());
    store::StatementRef q;
    REQUIRE(db->Cached(store::sql::kListSessions, &q).ok());
    q->Bind(1, "");
    q->Bind(2, base::NowMs());
    for (int i = 3; i <= 5; ++i) q->BindNull(i);
    q->Bind(6, "");
    store::PartitionPage<store::Session> part;
    REQUIRE(store::CollectPartitionPage(
                *q, bounds, store::kSessionColumnCount, store::kSessionKeyColumn,
                [](const store::Statement& row) {
                  store::Session s;
                  store::ReadSessionRow(row, &s);
                  return s;
                },
                &part)
                .ok());
    CHECK(part.examined == static_cast<int64_t>(wanted));  // before the budget: all 24
    CHECK(part.hits.size() == wanted);
    CHECK(part.stopped_at == part.hits.back().session_id);
  } else {
    // PostgreSQL hands a statement's rows over whole: the statement stops.
    std::unique_ptr<store::PgConn> conn;
    REQUIRE(store::PgConn::Connect(e.db, "a list's reader", &conn).ok());
    store::PgResult r;
    store::Status st = conn->Run(
        store::pgsql::kListSessions,
        {std::string(), std::nullopt, std::nullopt, std::nullopt, std::string(),
         std::to_string(kLimit + 1), std::to_string(bounds.examine), std::to_string(kBudget)},
        &r);
    INFO(st.ToString());
    REQUIRE(st.ok());
    // The rows up to the budget, and one saying where the walk stopped;
    // before the budget: all 24 (and no stop).
    CHECK(r.rows() == static_cast<int>(wanted) + 1);
  }
}
