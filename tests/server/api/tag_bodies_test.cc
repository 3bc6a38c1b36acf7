#include "server/api/tag_bodies.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace server {
namespace {

using nlohmann::json;

}  // namespace

TEST_CASE("tag bodies: attributes are checked as labels and come out as compact sorted JSON") {
  std::string out;
  BodyError e;
  REQUIRE(ParseTags(json{{"gpu", "a100"}, {"chrome", "126"}}, "containers[0].attributes",
                    "attributes", &out, &e));
  CHECK(out == R"({"chrome":"126","gpu":"a100"})");
  CHECK_FALSE(ParseTags(json{{"gpu", 1}}, "containers[0].attributes", "attributes", &out, &e));
  CHECK(e.message == "containers[0].attributes.gpu: must be a string");
  CHECK_FALSE(ParseTags(json{{"", "v"}}, "attributes", "attributes", &out, &e));
  CHECK_FALSE(ParseTags(json{{"k", std::string(257, 'v')}}, "attributes", "attributes", &out, &e));
  CHECK_FALSE(ParseTags(json{{"k", std::string("a\0b", 3)}}, "attributes", "attributes", &out, &e));
  CHECK_FALSE(ParseTags(json::array(), "attributes", "attributes", &out, &e));
}

TEST_CASE("tag bodies: a selector is a term a key in key order, each value once, within bounds") {
  std::vector<store::SelectorTerm> terms;
  BodyError e;
  REQUIRE(ParseSelector(json{{"gpu", "a100"}, {"chrome", {"126", "125", "126"}}}, &terms, &e));
  REQUIRE(terms.size() == 2);
  CHECK(terms[0].key == "chrome");
  CHECK(terms[0].values == std::vector<std::string>{"125", "126"});
  CHECK(terms[1].key == "gpu");
  CHECK(terms[1].values == std::vector<std::string>{"a100"});
  REQUIRE(ParseSelector(json::object(), &terms, &e));
  CHECK(terms.empty());
  CHECK_FALSE(ParseSelector(json{{"gpu", json::array()}}, &terms, &e));
  CHECK(e.message == "selector.gpu: must hold at least one value");
  CHECK_FALSE(ParseSelector(json{{"a:b", "c"}}, &terms, &e));
  CHECK(e.code == "invalid_field");
  json wide = json::object();
  for (int k = 0; k < 5; ++k) {
    for (int v = 0; v < 13; ++v) wide["k" + std::to_string(k)].push_back(std::to_string(v));
  }
  CHECK_FALSE(ParseSelector(wide, &terms, &e));  // 65 values
  CHECK(e.message == "selector: at most 64 values in all");
  json many = json::object();
  for (int k = 0; k < 17; ++k) many["k" + std::to_string(k)] = "v";
  CHECK_FALSE(ParseSelector(many, &terms, &e));
  CHECK(e.message == "selector: at most 16 keys");
}

}  // namespace server
