#include "store/postgres/pg_values.h"

#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <utility>

namespace store {
namespace {

TEST_CASE("pg values: parameters are sent as text, NULL as nullopt") {
  CHECK(P(int64_t{-42}) == "-42");
  CHECK(P("abc") == "abc");
  CHECK(P(std::string_view("x y")) == "x y");
  CHECK(P(0.1) == "0.10000000000000001");  // every bit of the double, read back exactly
  CHECK(P(2.0) == "2");
  CHECK_FALSE(Null().has_value());
  CHECK_FALSE(OrNull("").has_value());
  CHECK(OrNull("weur") == "weur");
}

TEST_CASE("pg values: an array parameter quotes each item and escapes quote and backslash") {
  CHECK(ArrayParam({}) == "{}");
  CHECK(ArrayParam({P("a"), Null(), P("b,c")}) == R"({"a",NULL,"b,c"})");
  CHECK(ArrayParam({P(R"(say "hi" \o/)")}) == R"({"say \"hi\" \\o/"})");
  CHECK(TextArrayParam({"c-1", "c-2"}) == R"({"c-1","c-2"})");
  CHECK(TextArrayParam({""}) == R"({""})");  // an empty text, not NULL
}

TEST_CASE("pg values: a result owns its rows, moved or empty") {
  PgResult none;
  CHECK(none.rows() == 0);
  CHECK(none.changed() == 0);

  PgResult made(PQmakeEmptyPGresult(nullptr, PGRES_COMMAND_OK));
  CHECK(made.rows() == 0);
  CHECK(made.changed() == 0);  // no command tag: nothing changed
  PgResult moved(std::move(made));
  CHECK(moved.rows() == 0);
  CHECK(made.rows() == 0);  // NOLINT(bugprone-use-after-move): emptied by the move
  none = std::move(moved);  // frees nothing twice (ASan's build checks)
  CHECK(none.rows() == 0);
}

}  // namespace
}  // namespace store
