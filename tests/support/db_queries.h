#ifndef EDGEALLOC_TESTS_SUPPORT_DB_QUERIES_H_
#define EDGEALLOC_TESTS_SUPPORT_DB_QUERIES_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "store/sqlite/db.h"

namespace testing {

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
