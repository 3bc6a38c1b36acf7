#include "store/session_rules.h"

#include <catch2/catch.hpp>

namespace {

store::Caller Tenant(const char* t, bool admin = false) {
  store::Caller c;
  c.tenant = t;
  c.admin = admin;
  return c;
}

}  // namespace

TEST_CASE("session rules: another tenant is refused before it learns the lease is over") {
  const store::StoredSession live{"alice", 2000, 7}, over{"alice", 1000, 7};
  CHECK_FALSE(store::RefuseSessionRead(Tenant("alice"), "s", live, 1500).has_value());
  CHECK_FALSE(store::RefuseSessionRead(Tenant("ops", true), "s", live, 1500).has_value());
  CHECK(store::RefuseSessionRead(Tenant("bob"), "s", over, 1500)->outcome ==
        store::Outcome::kForbidden);
  CHECK(store::RefuseSessionRead(Tenant("alice"), "s", over, 1500)->outcome ==
        store::Outcome::kNotFound);
}

TEST_CASE("session rules: a failed compare-and-swap is explained, or is an error") {
  const store::StoredSession stored{"alice", 2000, 7};
  store::SessionResult r;
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 6, nullptr, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kNotFound);
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 6, &stored, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kStaleToken);
  REQUIRE(store::ExplainFailedCas(Tenant("bob"), "s", 7, &stored, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kForbidden);
  // Current token, live lease, right tenant: nothing explains it.
  CHECK(store::ExplainFailedCas(Tenant("alice"), "s", 7, &stored, 1500, &r).IsIOError());
}
