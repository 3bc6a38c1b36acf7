// The fence against an old primary (store/postgres/fence.h), with real
// servers: a primary, its streaming standby promoted, and the old primary
// brought back writable on its old timeline, listed first.
#include "store/postgres/fence.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/postgres_storage.h"
#include "tests/support/await.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"

namespace {

using Clock = std::chrono::steady_clock;
using testing::PgServer;

std::unique_ptr<store::PostgresStorage> OpenNode(const std::string& uri, const std::string& name) {
  return testing::OpenPgOrDie(uri, 2, name);
}

store::ContainerResult Register(store::Storage* storage, const std::string& id) {
  std::vector<store::ContainerSpec> specs = {{id, "weur", "chrome", 10, "{}"}};
  return testing::Await<store::ContainerResult>(
      [&](auto done) { storage->Register(specs, done); });
}

// Registers `id`, trying again while the node answers "unavailable" (it is
// reconnecting), for at most 30 s.
void RegisterSoon(store::Storage* storage, const std::string& id) {
  store::ContainerResult r;
  for (auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
    r = Register(storage, id);
    if (r.outcome == store::Outcome::kOk) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("registering " << id << " never succeeded: " << r.message);
}

// Everything edgealloc keeps in the database at `uri`, as one hash.
std::string Digest(const std::string& uri) {
  return PgServer::Query(uri, R"sql(
    SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
      SELECT 'c' || c::text AS x FROM containers c
      UNION ALL SELECT 'h' || h::text FROM session_history h
      UNION ALL SELECT 'm' || m::text FROM edgealloc_meta m
      UNION ALL SELECT 'n' || n::text FROM node_claim_counts n) t)sql");
}

std::string Count(const std::string& uri, const std::string& like) {
  return PgServer::Query(uri, "SELECT count(*) FROM containers WHERE id LIKE '" + like + "'");
}

}  // namespace

TEST_CASE("fence: after a failover no node writes to the old primary that comes back",
          "[postgres]") {
  PgServer::Options options;
  options.fsync = false;  // durability is not what this tests
  PgServer p1(options);
  p1.CreateDatabase("fenced");
  auto p2 = PgServer::StandbyOf(p1, options);
  const std::string on_p1 = p1.uri("fenced"), on_p2 = p2.uri("fenced");
  // The old primary listed first, as a connection string written before
  // the failover lists it.
  const std::string both = "postgresql://edgealloc@127.0.0.1:" + std::to_string(p1.port()) +
                           ",127.0.0.1:" + std::to_string(p2.port()) +
                           "/fenced?target_session_attrs=read-write";
  auto node = OpenNode(both, "fence_test node");
  for (int i = 0; i < 5; ++i) RegisterSoon(node.get(), "before-" + std::to_string(i));
  CHECK(PgServer::Query(on_p1, "SELECT value FROM edgealloc_meta WHERE key = 'fence'") == "1 1");

  // Failover: a fast stop sends the standby all of the primary's WAL first.
  p1.Stop();
  p2.Promote();
  RegisterSoon(node.get(), "after-failover");
  CHECK(PgServer::Query(on_p2, "SELECT value FROM edgealloc_meta WHERE key = 'fence'") == "2 2");

  // The old primary comes back writable, on its old timeline, listed first.
  p1.Start();
  REQUIRE(PgServer::Query(on_p1, "SELECT pg_is_in_recovery()") == "f");
  const std::string p1_before = Digest(on_p1);
  // Every connection of the node breaks: each reconnect meets p1 first.
  PgServer::Query(on_p2,
                  "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                  "WHERE application_name LIKE 'fence_test node%'");
  constexpr int kAfter = 10;
  for (int i = 0; i < kAfter; ++i) RegisterSoon(node.get(), "after-return-" + std::to_string(i));
  // Reads reconnect too, and read the promoted primary (503 meanwhile: an
  // idle writer finds its broken connection on its next probe).
  store::ContainerResult read;
  for (auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
    read = node->GetContainer("after-return-0");
    if (read.outcome == store::Outcome::kOk) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(read.outcome == store::Outcome::kOk);

  // A node started now, which has seen nothing, learns the epoch from the
  // listed hosts before it connects.
  auto fresh = OpenNode(both, "fence_test fresh");
  RegisterSoon(fresh.get(), "fresh-0");

  CHECK(Digest(on_p1) == p1_before);
  CHECK(Count(on_p1, "after-%") == "0");
  CHECK(Count(on_p1, "fresh-%") == "0");
  CHECK(Count(on_p2, "after-return-%") == std::to_string(kAfter));
  CHECK(Count(on_p2, "fresh-%") == "1");
  CHECK(Count(on_p2, "before-%") == "5");
  CHECK(PgServer::Query(on_p1, "SELECT value FROM edgealloc_meta WHERE key = 'fence'") == "1 1");
  const store::Storage::FenceStats stats = node->fence_stats();
  CHECK(stats.epoch == 2);
  CHECK(stats.refusals > 0);
  CHECK(fresh->fence_stats().epoch == 2);
}

TEST_CASE("fence: one connect string becomes one per host, each alone") {
  const auto hosts = store::SingleHostConninfos(
      "postgresql://u@10.0.0.1:5433,10.0.0.2:5434/db?target_session_attrs=read-write");
  REQUIRE(hosts.size() == 2);
  CHECK(hosts[0].find("host='10.0.0.1'") != std::string::npos);
  CHECK(hosts[0].find("port='5433'") != std::string::npos);
  CHECK(hosts[0].find("10.0.0.2") == std::string::npos);
  CHECK(hosts[1].find("host='10.0.0.2'") != std::string::npos);
  CHECK(hosts[1].find("port='5434'") != std::string::npos);
  CHECK(hosts[1].find("dbname='db'") != std::string::npos);
  CHECK(hosts[1].find("target_session_attrs='read-write'") != std::string::npos);
  CHECK(store::SingleHostConninfos("host=a,b port=5432 dbname=x").size() == 2);
  CHECK(store::SingleHostConninfos("host=a port=5432 dbname=x").size() == 1);
}

TEST_CASE("fence: a node refuses a server below the epoch it has seen, or beside it") {
  store::PgFence fence;
  CHECK(fence.Admit({0, 1}, "h:1").ok());  // no schema yet, nothing seen
  CHECK(fence.Admit({1, 1}, "h:1").ok());
  CHECK(fence.Admit({2, 2}, "h:2").ok());
  const store::Status old = fence.Admit({1, 1}, "h:1");
  CHECK(store::IsFenced(old));
  CHECK(old.message().find("unavailable") != std::string::npos);
  CHECK(store::IsFenced(fence.Admit({2, 3}, "h:3")));  // promoted beside the one seen
  CHECK(store::IsFenced(fence.Admit({0, 2}, "h:4")));  // a database without the schema
  CHECK(fence.Admit({3, 3}, "h:3").ok());
  CHECK(fence.seen().epoch == 3);
  CHECK(fence.refusals() == 3);
}
