#ifndef EDGEALLOC_TESTS_SUPPORT_ENGINES_H_
#define EDGEALLOC_TESTS_SUPPORT_ENGINES_H_

// A store::Storage of either engine for tests that run once an engine:
//   Engine e(GENERATE(as<std::string>{}, "sqlite", "postgres"));
// SQLite on a file in a TempDir; PostgreSQL on a fresh database of one
// server the test binary starts on first use (tests/support/pg_server.h).

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "store/storage.h"
#include "tests/support/pg_server.h"
#include "tests/support/temp_dir.h"

// Runs the enclosing test case once an engine (Catch2's GENERATE).
#define EDGEALLOC_ENGINES GENERATE(as<std::string>{}, "sqlite", "postgres")

namespace testing {

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
