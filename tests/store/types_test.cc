#include "store/types.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

TEST_CASE("types: every outcome has its own snake_case name, as docs/api.md's error codes") {
  using store::Outcome;
  CHECK(std::string(store::OutcomeName(Outcome::kNoCapacity)) == "no_capacity");
  CHECK(std::string(store::OutcomeName(Outcome::kQuotaExceeded)) == "quota_exceeded");
  CHECK(std::string(store::OutcomeName(Outcome::kStaleToken)) == "stale_token");
  CHECK(std::string(store::OutcomeName(Outcome::kNotFound)) == "not_found");
  CHECK(std::string(store::OutcomeName(Outcome::kForbidden)) == "forbidden");
  CHECK(std::string(store::OutcomeName(Outcome::kConflict)) == "conflict");
  CHECK(std::string(store::OutcomeName(Outcome::kOverloaded)) == "overloaded");
  CHECK(std::string(store::OutcomeName(Outcome::kNoMatch)) == "no_match");
  std::set<std::string> names;
  for (Outcome o : {Outcome::kOk, Outcome::kReplayed, Outcome::kNoCapacity,
                    Outcome::kQuotaExceeded, Outcome::kStaleToken, Outcome::kNotFound,
                    Outcome::kForbidden, Outcome::kConflict, Outcome::kOverloaded,
                    Outcome::kError, Outcome::kNoMatch}) {
    names.insert(store::OutcomeName(o));
  }
  CHECK(names.size() == 11);
}
