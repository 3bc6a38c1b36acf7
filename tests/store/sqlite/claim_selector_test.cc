#include "store/sqlite/claim_selector.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "store/sqlite/claim_sql.h"
#include "store/sqlite/selector_sql.h"
#include "tests/store/sqlite/query_plan.h"

namespace {

using testing::PlanOf;

// A line of `plan` that reads a table whole, or a whole index of one: what
// a claim must never do with a million containers. The selector's own JSON
// (json_each, a virtual table) and its terms materialized from it
// (other_terms, other_keys) are scans of a few terms, and candidate_pool
// of the K candidates, not of a table.
bool ScansATable(const std::string& plan) {
  std::istringstream lines(plan);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("SCAN ", 0) == 0 && line.find("VIRTUAL TABLE") == std::string::npos &&
        line != "SCAN candidate_pool" && line != "SCAN other_terms" && line != "SCAN other_keys") {
      return true;
    }
  }
  return false;
}

// How the candidates are found: the plan's lines from candidate_pool's
// co-routine to the scan of what it yields (the random pick after it sorts
// the K, whatever finds them).
std::string CandidatesOf(const std::string& plan) {
  const size_t from = plan.find("CO-ROUTINE candidate_pool");
  return from == std::string::npos ? "" : plan.substr(from, plan.find("SCAN candidate_pool") - from);
}

// The first line of `plan` that reads JSON (json_each, a virtual table)
// inside a correlated subquery, run again for each row the walk passes;
// empty if none does. Its JSON may be read only where the selector's other
// terms are materialized, or in a list subquery of the driving term's
// values, each read once a statement.
std::string JsonReadPerCandidate(const std::string& plan) {
  std::istringstream lines(plan);
  std::string line, block;
  while (std::getline(lines, line)) {
    if (line.find("SUBQUERY") != std::string::npos || line.rfind("MATERIALIZE ", 0) == 0 ||
        line.rfind("CO-ROUTINE ", 0) == 0) {
      block = line;
    } else if (line.find("VIRTUAL TABLE") != std::string::npos &&
               block != "MATERIALIZE other_terms" && block.rfind("LIST SUBQUERY", 0) != 0) {
      return block + ": " + line;
    }
  }
  return "";
}

constexpr char kAttributeSearch[] =
    "SEARCH a USING COVERING INDEX container_attributes_claim (region=? AND pool=? AND key=? AND "
    "value=?)";

}  // namespace

TEST_CASE("claim_selector: a selector's claim finds its candidates through the attribute index "
          "of its driving term, each container by its key, never a scan of the pool") {
  const std::string one = PlanOf(store::sql::kClaimSelectedOneValue);
  INFO(one);
  // One value: the index walk is in latency order, so it stops after K.
  CHECK(CandidatesOf(one).find(kAttributeSearch) != std::string::npos);
  CHECK(CandidatesOf(one).find("TEMP B-TREE FOR ORDER BY") == std::string::npos);
  CHECK(one.find("SEARCH c USING INDEX sqlite_autoindex_containers_1 (id=?)") !=
        std::string::npos);
  CHECK(one.find("containers_claimable") == std::string::npos);
  CHECK_FALSE(ScansATable(one));
  // Several values: one range each, then sorted (a range of the matching ones only).
  const std::string several = PlanOf(store::sql::kClaimSelectedValues);
  INFO(several);
  CHECK(CandidatesOf(several).find(kAttributeSearch) != std::string::npos);
  CHECK(several.find("containers_claimable") == std::string::npos);
  CHECK_FALSE(ScansATable(several));
  // Every other term is checked by the attribute table's primary key.
  CHECK(several.find("SEARCH m USING PRIMARY KEY (container_id=?)") != std::string::npos);
}

TEST_CASE("claim_selector: the selector's JSON is read once a claim, never once a candidate") {
  for (const char* sql : {store::sql::kClaimSelectedOneValue, store::sql::kClaimSelectedValues,
                          store::sql::kClaimPackedSelectedOneValue,
                          store::sql::kClaimDistributedSelectedValues,
                          store::sql::kAnySelectorMatch}) {
    const std::string plan = PlanOf(sql);
    INFO(plan);
    CHECK(plan.find("MATERIALIZE other_terms") != std::string::npos);
    CHECK(JsonReadPerCandidate(plan).empty());
  }
}

TEST_CASE("claim_selector: the no_match read walks the attribute index, not the pool") {
  const std::string plan = PlanOf(store::sql::kAnySelectorMatch);
  INFO(plan);
  CHECK(plan.find(kAttributeSearch) != std::string::npos);
  CHECK_FALSE(ScansATable(plan));
}

TEST_CASE("claim_selector: the statement follows the placement and the selector's driving term") {
  using store::Placement;
  store::ClaimRequest req;
  CHECK(store::ClaimStatement(req, Placement::kFittest) ==
        static_cast<const char*>(store::sql::kClaimFittest));
  CHECK(store::ClaimStatement(req, Placement::kPacked) ==
        static_cast<const char*>(store::sql::kClaimPacked));
  req.placement = Placement::kDistributed;  // the claim's own wins over the server's
  CHECK(store::ClaimStatement(req, Placement::kPacked) ==
        static_cast<const char*>(store::sql::kClaimDistributed));
  req.placement = Placement::kDefault;
  req.selector = {{"chrome", {"125", "126"}}, {"gpu", {"a100"}}};
  CHECK(store::ClaimStatement(req, Placement::kFittest) ==
        static_cast<const char*>(store::sql::kClaimSelectedOneValue));
  CHECK(store::ClaimStatement(req, Placement::kPacked) ==
        static_cast<const char*>(store::sql::kClaimPackedSelectedOneValue));
  req.selector = {{"chrome", {"125", "126"}}};
  CHECK(store::ClaimStatement(req, Placement::kFittest) ==
        static_cast<const char*>(store::sql::kClaimSelectedValues));
  CHECK(store::ClaimStatement(req, Placement::kDistributed) ==
        static_cast<const char*>(store::sql::kClaimDistributedSelectedValues));
}

TEST_CASE("claim_selector: packed and distributed claims with a selector walk the attribute "
          "index too, never the pool") {
  for (const char* sql : {static_cast<const char*>(store::sql::kClaimPackedSelectedOneValue),
                          static_cast<const char*>(store::sql::kClaimDistributedSelectedOneValue),
                          static_cast<const char*>(store::sql::kClaimPackedSelectedValues),
                          static_cast<const char*>(store::sql::kClaimDistributedSelectedValues)}) {
    const std::string plan = PlanOf(sql);
    INFO(plan);
    CHECK(CandidatesOf(plan).find(kAttributeSearch) != std::string::npos);
    CHECK(plan.find("containers_claimable") == std::string::npos);
    CHECK(plan.find("containers_packing") == std::string::npos);
    CHECK_FALSE(ScansATable(plan));
  }
}

TEST_CASE("claim_selector: a claim's course through shards ends no_match only if no shard "
          "matched") {
  using store::Outcome;
  bool matched = false;
  Outcome o = Outcome::kNoMatch;
  CHECK(store::TryNextShard(&o, /*more_shards=*/true, &matched));
  o = Outcome::kNoCapacity;
  CHECK(store::TryNextShard(&o, true, &matched));
  CHECK(matched);
  o = Outcome::kNoMatch;
  CHECK_FALSE(store::TryNextShard(&o, false, &matched));
  CHECK(o == Outcome::kNoCapacity);
  bool none = false;
  o = Outcome::kNoMatch;
  CHECK_FALSE(store::TryNextShard(&o, false, &none));
  CHECK(o == Outcome::kNoMatch);
  o = Outcome::kOk;
  CHECK_FALSE(store::TryNextShard(&o, true, &none));
}

TEST_CASE("claim_selector: a packed claim seeks the fullest count, then its containers in latency "
          "order, never sorting the pool's idle ones") {
  const std::string plan = PlanOf(store::sql::kClaimPacked);
  INFO(plan);
  // Walked `slots_used DESC, latency_ms` in one go, the index gave latency
  // backwards and SQLite sorted the idle containers on most claims.
  CHECK(plan.find("SEARCH containers USING INDEX containers_packing (region=? AND pool=? AND "
                  "slots_used=?)") != std::string::npos);
  CHECK(plan.find("SCAN containers") == std::string::npos);
}
