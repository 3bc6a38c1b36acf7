// The PostgreSQL claim's selector (store/postgres/selector_sql.h) is found by
// index: the plans of its statements on a database with a fleet's worth of
// rows and fresh statistics.
#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <vector>

#include "store/postgres/postgres_storage.h"
#include "store/postgres/selector_sql.h"
#include "store/postgres/session_sql.h"
#include "tests/store/postgres/pg_query_plan.h"
#include "tests/support/await.h"
#include "tests/support/pg_server.h"
#include "tests/support/pg_storage.h"

namespace {

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("pg selector: a selector's claim and its no_match read walk the attribute index, never "
          "the pool's containers") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto storage = testing::OpenPgOrDie(uri, 1, "pg_selector_test");
  // 40 pools of 50, half of each with gpu a100, half t4; every one with a
  // zone. And one pool of 1,000 (`big`), where a plan that reads the pool
  // first costs milliseconds a claim.
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 3000; ++i) {
    const std::string pool = i < 2000 ? "p" + std::to_string(i % 40) : "big";
    store::ContainerSpec spec{"c" + std::to_string(i), "weur", pool, i % 97, "{}"};
    spec.attributes = std::string(R"({"gpu":")") + (i % 2 ? "a100" : "t4") + R"(","zone":"z)" +
                      std::to_string(i % 3) + "\"}";
    specs.push_back(std::move(spec));
  }
  auto r = testing::Await<store::ContainerResult>([&](auto cb) { storage->Register(specs, cb); });
  REQUIRE(r.outcome == store::Outcome::kOk);
  testing::PgServer::Query(uri, "ANALYZE containers");
  testing::PgServer::Query(uri, "ANALYZE container_attributes");

  for (const char* pool : {"'p1'", "'big'"}) {
    // The plan of a claim of the pool with the driving values and selector.
    auto claim_plan = [&](const char* sql, const char* values, const char* selector) {
      return testing::PgPlanOf(uri, sql, {"'weur'", pool, "30000", "5", "'s'", "'t'", "NULL",
                                          "60000", "-1", "NULL", "'gpu'", values, selector});
    };
    const std::string one = claim_plan(store::pgsql::kClaimSelectedOneValue, "ARRAY['a100']",
                                       R"('{"gpu":["a100"],"zone":["z1","z2"]}')");
    INFO(pool << ", one value:\n" << one);
    CHECK(one.find("container_attributes_claim") != std::string::npos);
    CHECK(one.find("containers_claimable") == std::string::npos);
    CHECK(one.find("Seq Scan") == std::string::npos);
    // In latency order from the index, stopped after K: nothing to sort.
    CHECK(one.find("Sort Key: a.latency_ms") == std::string::npos);
    // The selector's JSON is read once, in its CTE, not once a candidate in
    // each of the claim's two candidate reads.
    CHECK(Occurrences(one, "Function Scan on jsonb_each") == 1);
    CHECK(one.find("CTE other_terms") != std::string::npos);
    const std::string many = claim_plan(store::pgsql::kClaimSelectedValues, "ARRAY['a100','t4']",
                                        R"('{"gpu":["a100","t4"],"zone":["z1"]}')");
    INFO(pool << ", several values:\n" << many);
    // Every attribute row of the values, sorted (here all the pool: the
    // planner may read them by index or, the table being small, in full),
    // each joined to its container by primary key; never the pool's
    // containers read first.
    CHECK(many.find("containers_claimable") == std::string::npos);
    CHECK(many.find("Seq Scan on containers ") == std::string::npos);
    CHECK(many.find("Index Scan using containers_pkey on containers c_1") != std::string::npos);
  }
  const std::string any = testing::PgPlanOf(uri, store::pgsql::kAnySelectorMatch,
                                 {"'weur'", "'p1'", "'gpu'", "ARRAY['a100']",
                                  R"('{"gpu":["a100"],"zone":["z1"]}')"});
  INFO(any);
  CHECK(any.find("container_attributes_claim") != std::string::npos);
  CHECK(any.find("Seq Scan") == std::string::npos);
  CHECK(Occurrences(any, "Function Scan on jsonb_each") == 1);
}
