// Idempotency keys across PostgreSQL nodes: two claims of one key on two
// nodes' writers wait for each other only where every other lock of a
// group is waited for, in the ordered lock preamble (pg_writer.h), never on
// the unique index midway through a group.
#include "store/postgres/postgres_storage.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/pg.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"
#include "tests/support/requests.h"
#include "tests/support/eventually.h"

namespace {

std::unique_ptr<store::PostgresStorage> Open(const std::string& uri, const std::string& node) {
  return testing::OpenPgOrDie(uri, 1, node);
}

std::vector<store::ContainerSpec> Specs(const std::string& prefix, int n) {
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < n; ++i) specs.push_back(testing::Spec(prefix + std::to_string(i), "weur"));
  return specs;
}

void Claim(store::Storage* node, const std::string& key,
           std::promise<store::SessionResult>* done) {
  store::ClaimRequest req = testing::Req("weur", "t");
  req.lease_ms = 600000;
  req.idempotency_key = key;
  node->Claim(req, [done](store::SessionResult r) { done->set_value(std::move(r)); });
}

}  // namespace

// Each node runs one group of two keyed claims, in opposite key orders,
// with a registration between them (so that each has written its first key
// before it reaches the second), both groups let go at one instant. Waited
// for on the unique index, each second claim waited for the other node's
// uncommitted first: a cycle, which PostgreSQL broke after deadlock_timeout
// by failing one claim, whose group then ran again. Waited for in the
// preamble (the keys' advisory locks, in one order), one group goes first
// and the other replays its sessions.
TEST_CASE("pg idempotency: two nodes claiming the same keys in opposite orders never deadlock") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto a = Open(uri, "node a");
  auto b = Open(uri, "node b");
  std::vector<store::ContainerSpec> specs = Specs("c", 8);
  specs.push_back(testing::Spec("hold-a", "weur"));
  specs.push_back(testing::Spec("hold-b", "weur"));
  std::promise<store::ContainerResult> registered;
  a->Register(specs, [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);

  // An outside transaction holds two rows; each node's writer waits for one
  // (a drain), so that what is submitted next makes one group on each.
  std::unique_ptr<store::PgConn> outside;
  REQUIRE(store::PgConn::Connect(uri, "outside", &outside).ok());
  REQUIRE(outside->Exec("BEGIN; SELECT 1 FROM containers WHERE id LIKE 'hold-%' FOR UPDATE").ok());
  std::promise<store::ContainerResult> drained_a, drained_b;
  a->Drain("hold-a", [&](store::ContainerResult r) { drained_a.set_value(std::move(r)); });
  b->Drain("hold-b", [&](store::ContainerResult r) { drained_b.set_value(std::move(r)); });
  // Both writers wait on the drained rows' locks (30 s at most).
  REQUIRE(testing::Eventually(
      [&] {
        return testing::PgServer::Query(
                   uri, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND application_name LIKE 'node _ writer 0'") == "2";
      },
      std::chrono::seconds(30)));

  std::promise<store::SessionResult> a1, a2, b1, b2;
  std::promise<store::ContainerResult> a_reg, b_reg;
  Claim(a.get(), "k1", &a1);
  a->Register(Specs("a-", 300), [&](store::ContainerResult r) { a_reg.set_value(std::move(r)); });
  Claim(a.get(), "k2", &a2);
  Claim(b.get(), "k2", &b2);
  b->Register(Specs("b-", 300), [&](store::ContainerResult r) { b_reg.set_value(std::move(r)); });
  Claim(b.get(), "k1", &b1);
  REQUIRE(outside->Exec("COMMIT").ok());

  CHECK(drained_a.get_future().get().outcome == store::Outcome::kOk);
  CHECK(drained_b.get_future().get().outcome == store::Outcome::kOk);
  CHECK(a_reg.get_future().get().outcome == store::Outcome::kOk);
  CHECK(b_reg.get_future().get().outcome == store::Outcome::kOk);
  const store::SessionResult ra1 = a1.get_future().get(), ra2 = a2.get_future().get();
  const store::SessionResult rb1 = b1.get_future().get(), rb2 = b2.get_future().get();
  for (const auto* r : {&ra1, &ra2, &rb1, &rb2}) {
    INFO(r->message);
    CHECK((r->outcome == store::Outcome::kOk || r->outcome == store::Outcome::kReplayed));
  }
  // One session a key, whichever node made it.
  CHECK(ra1.session.session_id == rb1.session.session_id);
  CHECK(ra2.session.session_id == rb2.session.session_id);
  CHECK(testing::PgServer::Query(uri, "SELECT count(*) FROM sessions") == "2");
  // No claim failed on the fast path (a deadlock did, and its group ran
  // again one job at a time).
  CHECK(a->writer_stats(0).groups_rerun.load() + b->writer_stats(0).groups_rerun.load() == 0);
  CHECK(a->writer_stats(0).jobs_failed.load() + b->writer_stats(0).jobs_failed.load() == 0);
}
