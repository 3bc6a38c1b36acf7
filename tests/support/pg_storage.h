#ifndef EDGEALLOC_TESTS_SUPPORT_PG_STORAGE_H_
#define EDGEALLOC_TESTS_SUPPORT_PG_STORAGE_H_

// A PostgresStorage for the engine's tests, opened as the server opens it.

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "store/postgres/postgres_storage.h"
#include "store/storage.h"

namespace testing {

// The options of a storage of `uri` with `writers` writer connections,
// known to the database as `program`.
inline store::StorageOptions PgOptions(const std::string& uri, int writers,
                                       const std::string& program) {
  store::StorageOptions options;
  options.db = uri;
  options.pg_writers = writers;
  options.program = program;
  return options;
}

// That storage, opened; the calling test fails (REQUIRE) if it cannot be.
inline std::unique_ptr<store::PostgresStorage> OpenPgOrDie(const std::string& uri, int writers,
                                                           const std::string& program) {
  std::unique_ptr<store::PostgresStorage> storage;
  const store::Status s = store::PostgresStorage::Open(PgOptions(uri, writers, program), &storage);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return storage;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_PG_STORAGE_H_
