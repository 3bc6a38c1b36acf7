#include "store/selector.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

TEST_CASE("selector: the driving term is the one with the fewest values, the first of equals") {
  using store::SelectorTerm;
  CHECK(store::DrivingTerm({{"a", {"1", "2"}}, {"b", {"1"}}, {"c", {"1"}}}) == 1);
  CHECK(store::DrivingTerm({{"a", {"1"}}, {"b", {"1", "2"}}}) == 0);
  CHECK(store::DrivingTerm({{"a", {"1", "2", "3"}}}) == 0);
}

TEST_CASE("selector: its JSON is an object of arrays of strings, escaped") {
  CHECK(store::SelectorJson({{"chrome", {"125", "126"}}, {"gpu", {"a100"}}}) ==
        R"({"chrome":["125","126"],"gpu":["a100"]})");
  CHECK(store::SelectorJson({{"q\"k", {"v\\"}}}) == R"({"q\"k":["v\\"]})");
  CHECK(store::SelectorJson({}) == "{}");
  CHECK(store::ValuesJson({"x"}) == R"(["x"])");
}
