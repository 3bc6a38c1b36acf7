#ifndef EDGEALLOC_TESTS_SUPPORT_ENGINES_H_
#define EDGEALLOC_TESTS_SUPPORT_ENGINES_H_

// A store::Storage of either engine for tests that run once an engine:
//   Engine e(EDGEALLOC_ENGINES);
// SQLite on a file in a TempDir; PostgreSQL on a fresh database of one
// server the test binary starts on first use (tests/support/pg_server.h).

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>

#include "store/storage.h"
#include "tests/support/pg_server.h"
#include "tests/support/temp_dir.h"

// Runs the enclosing test case once an engine (Catch2's GENERATE): each of
// "sqlite" and "postgres" that EDGEALLOC_TEST_ENGINES names (comma
// separated; unset: both). The sanitizer trees run SQLite only
// (scripts/deep_checks.sh): the plain run covers PostgreSQL, whose servers
// would take most of their time.
#define EDGEALLOC_ENGINES                                                         \
  GENERATE(filter([](const std::string& e) { return testing::EngineWanted(e); }, \
                  values<std::string>({"sqlite", "postgres"})))
// The same, with SQLite in 3 shard files too ("sqlite-sharded" is wanted
// where "sqlite" is).
#define EDGEALLOC_ENGINES_AND_SHARDS                                              \
  GENERATE(filter([](const std::string& e) { return testing::EngineWanted(e); }, \
                  values<std::string>({"sqlite", "sqlite-sharded", "postgres"})))

namespace testing {

// Whether EDGEALLOC_TEST_ENGINES (unset: every engine) names `engine`.
inline bool EngineWanted(const std::string& engine) {
  const char* wanted = std::getenv("EDGEALLOC_TEST_ENGINES");
  if (wanted == nullptr || *wanted == '\0') return true;
  const std::string list = std::string(",") + wanted + ",";
  const std::string name = engine == "sqlite-sharded" ? "sqlite" : engine;
  return list.find("," + name + ",") != std::string::npos;
}

// One PostgreSQL server for the whole binary; each test gets a database.
inline PgServer& SharedPg() {
  static PgServer server;
  return server;
}

struct Engine {
  // "sqlite", "postgres", or "sqlite-sharded" (SQLite in 3 shard files, for
  // what must merge across partitions).
  std::string engine;
  testing::TempDir dir;
  std::string db;
  std::unique_ptr<store::Storage> storage;

  Engine(const std::string& engine_name, store::ClaimPolicy policy = {}, int pg_writers = 4)
      : engine(engine_name), pg_writers_(pg_writers) {
    db = engine == "postgres" ? SharedPg().NewDatabaseUri() : dir.File("pool.db");
    storage = Open(policy);
  }
  // Another node on the same database.
  std::unique_ptr<store::Storage> Open(store::ClaimPolicy policy = {}) {
    store::StorageOptions options;
    options.db = db;
    options.sync = store::Sync::kNormal;  // logic is tested here, not fsync
    options.policy = policy;
    options.program = "edgealloc test";
    options.pg_writers = pg_writers_;
    if (engine == "sqlite-sharded") options.shards = 3;
    std::unique_ptr<store::Storage> s;
    store::Status st = store::OpenStorage(options, &s);
    INFO(st.ToString());
    REQUIRE(st.ok());
    return s;
  }
  store::Storage* operator->() { return storage.get(); }

 private:
  int pg_writers_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_ENGINES_H_
