#ifndef EDGEALLOC_TESTS_SUPPORT_DB_QUERIES_H_
#define EDGEALLOC_TESTS_SUPPORT_DB_QUERIES_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "store/sqlite/db.h"

namespace testing {

// The Db at `path`, opened with `options`; the calling test fails (REQUIRE)
// if it cannot be.
inline std::unique_ptr<store::Db> OpenOrDie(const std::string& path,
                                            store::DbOptions options = {}) {
  std::unique_ptr<store::Db> db;
  store::Status s = store::Db::Open(path, options, &db);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(db != nullptr);
  return db;
}

// The same, read-only: a reader's connection, without the write lock.
inline std::unique_ptr<store::Db> OpenReadOnlyOrDie(const std::string& path) {
  store::DbOptions options;
  options.read_only = true;
  return OpenOrDie(path, options);
}

// The first column of the first row of `sql` on `db`; the calling test fails
// (REQUIRE) if the query errs or returns no row.
inline int64_t QueryInt(store::Db* db, const std::string& sql) {
  store::Statement q;
  store::Status s = db->Prepare(sql, &q);
  INFO(s.ToString());
  REQUIRE(s.ok());
  bool row = false;
  REQUIRE(q.Step(&row).ok());
  REQUIRE(row);
  return q.ColumnInt64(0);
}

inline std::string QueryText(store::Db* db, const std::string& sql) {
  store::Statement q;
  REQUIRE(db->Prepare(sql, &q).ok());
  bool row = false;
  REQUIRE(q.Step(&row).ok());
  REQUIRE(row);
  return q.ColumnString(0);
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_DB_QUERIES_H_
