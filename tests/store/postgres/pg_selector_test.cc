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

TEST_CASE("pg selector: a selector's claim and its no_match read walk the attribute index, never "
          "the pool's containers") {
  testing::PgServer server;
  const std::string uri = server.NewDatabaseUri();
  auto storage = testing::OpenPgOrDie(uri, 1, "pg_selector_test");
  // 40 pools of 50, half of each with gpu a100, half t4; every one with a zone.
  std::vector<store::ContainerSpec> specs;
  for (int i = 0; i < 2000; ++i) {
    store::ContainerSpec spec{"c" + std::to_string(i), "weur", "p" + std::to_string(i % 40),
                              i % 97, "{}"};
    spec.attributes = std::string(R"({"gpu":")") + (i % 2 ? "a100" : "t4") + R"(","zone":"z)" +
                      std::to_string(i % 3) + "\"}";
    specs.push_back(std::move(spec));
  }
  auto r = testing::Await<store::ContainerResult>([&](auto cb) { storage->Register(specs, cb); });
  REQUIRE(r.outcome == store::Outcome::kOk);
  testing::PgServer::Query(uri, "ANALYZE containers");
  testing::PgServer::Query(uri, "ANALYZE container_attributes");

  const std::string claim =
      testing::PgPlanOf(uri, store::pgsql::kClaimSelected,
             {"'weur'", "'p1'", "30000", "5", "'s'", "'t'", "NULL", "60000", "-1", "NULL",
              "'gpu'", "ARRAY['a100']", R"('{"gpu":["a100"],"zone":["z1","z2"]}')"});
  INFO(claim);
  CHECK(claim.find("container_attributes_claim") != std::string::npos);
  CHECK(claim.find("containers_claimable") == std::string::npos);
  CHECK(claim.find("Seq Scan") == std::string::npos);
  const std::string any = testing::PgPlanOf(uri, store::pgsql::kAnySelectorMatch,
                                 {"'weur'", "'p1'", "'gpu'", "ARRAY['a100']",
                                  R"('{"gpu":["a100"],"zone":["z1"]}')"});
  INFO(any);
  CHECK(any.find("container_attributes_claim") != std::string::npos);
  CHECK(any.find("Seq Scan") == std::string::npos);
}
