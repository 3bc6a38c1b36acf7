// The event log's commit order on PostgreSQL (store/postgres/events_sql.h):
// a reader that resumes after the last seq it saw misses nothing, whatever
// number of transactions commit at once, where a seq drawn at insert (a
// plain sequence: the commit-order trigger switched off) lets it skip.
#include <catch2/catch.hpp>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/pg.h"
#include "store/postgres/pg_values.h"
#include "tests/support/await.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"
#include "tests/support/requests.h"

namespace {

using testing::PgServer;

std::unique_ptr<store::PgConn> Connect(const std::string& uri) {
  std::unique_ptr<store::PgConn> conn;
  REQUIRE(store::PgConn::Connect(uri, "pg_events_test", &conn).ok());
  return conn;
}

std::string InsertContainer(const std::string& id) {
  return "INSERT INTO containers (id, region, pool, status, generation) VALUES ('" + id +
         "', 'weur', 'p', 'available', 1)";
}

// The naive reader: the events after `cursor`, by seq; moves it to the last.
std::vector<std::string> ReadAfter(const std::string& uri, int64_t* cursor) {
  const std::string rows = PgServer::Query(
      uri, "SELECT coalesce(string_agg(seq || ' ' || container_id, ',' ORDER BY seq), '') "
           "FROM events WHERE seq > " + std::to_string(*cursor));
  std::vector<std::string> ids;
  size_t start = 0;
  while (start < rows.size()) {
    size_t comma = rows.find(',', start);
    if (comma == std::string::npos) comma = rows.size();
    const std::string item = rows.substr(start, comma - start);
    const size_t space = item.find(' ');
    *cursor = std::stoll(item.substr(0, space));
    ids.push_back(item.substr(space + 1));
    start = comma + 1;
  }
  return ids;
}

// Two transactions: `first` writes an event, then `second` writes one and
// commits, a reader reads, then `first` commits and the reader reads on.
// The ids the reader saw.
std::set<std::string> InterleavedCommits(const std::string& uri) {
  auto first = Connect(uri);
  auto second = Connect(uri);
  REQUIRE(first->Exec("BEGIN").ok());
  REQUIRE(first->Exec(InsertContainer("first")).ok());
  REQUIRE(second->Exec("BEGIN").ok());
  REQUIRE(second->Exec(InsertContainer("second")).ok());
  REQUIRE(second->Exec("COMMIT").ok());
  int64_t cursor = 0;
  std::set<std::string> seen;
  for (const auto& id : ReadAfter(uri, &cursor)) seen.insert(id);
  REQUIRE(first->Exec("COMMIT").ok());
  for (const auto& id : ReadAfter(uri, &cursor)) seen.insert(id);
  return seen;
}

}  // namespace

TEST_CASE("pg events: seq follows commit order, so a resuming reader never skips an event "
          "that committed after a larger seq was read") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  { auto storage = testing::OpenPgOrDie(uri, 1, "pg_events_test"); }
  SECTION("a plain sequence (the commit-order trigger off): the reader skips the first") {
    PgServer::Query(uri, "ALTER TABLE events DISABLE TRIGGER events_commit_order");
    CHECK(InterleavedCommits(uri) == std::set<std::string>{"second"});
  }
  SECTION("seq drawn at commit: the reader sees both") {
    CHECK(InterleavedCommits(uri) == std::set<std::string>{"first", "second"});
  }
}

TEST_CASE("pg events: two nodes' writers registering at once, a resuming reader reads every "
          "event once, in seq order") {
  PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto a = testing::OpenPgOrDie(uri, 2, "node a");
  auto b = testing::OpenPgOrDie(uri, 2, "node b");
  constexpr int kPerWriter = 150;
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    store::Storage* node = w % 2 ? static_cast<store::Storage*>(a.get()) : b.get();
    writers.emplace_back([node, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        const std::string id = "w" + std::to_string(w) + "-" + std::to_string(i);
        testing::Await<store::ContainerResult>(
            [&](auto cb) { node->Register({testing::Spec(id, "weur", "p")}, cb); });
      }
    });
  }
  std::thread stopper([&] {
    for (auto& t : writers) t.join();
    done.store(true);
  });
  // Reads as ReadEvents does, resuming after the last seq, till every writer
  // is done and one more read finds nothing new.
  std::vector<std::string> seen;
  store::EventCursor cursor{{0}};
  for (bool last = false; !last;) {
    last = done.load();
    store::EventPage page;
    store::EventQuery all;
    all.limit = 7;  // many small pages: many chances to read between commits
    REQUIRE(a->ReadEvents(all, cursor, &page).ok());
    for (const auto& e : page.events) seen.push_back(e.container_id);
    if (!page.events.empty()) last = false;
    cursor = page.next;
  }
  stopper.join();
  std::set<std::string> unique(seen.begin(), seen.end());
  CHECK(seen.size() == 4 * kPerWriter);
  CHECK(unique.size() == seen.size());
}
