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
  // An expired lease the reaper has not freed yet ended at the lease's end.
  const auto expired = store::RefuseSessionRead(Tenant("alice"), "s", over, 1500);
  CHECK(expired->outcome == store::Outcome::kSessionEnded);
  CHECK(expired->end.reason == "expired");
  CHECK(expired->end.ended_at_ms == 1000);
}

TEST_CASE("session rules: a failed compare-and-swap is explained, or is an error") {
  const store::StoredSession stored{"alice", 2000, 7};
  store::SessionResult r;
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 6, false, nullptr, nullptr, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kNotFound);
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 6, false, &stored, nullptr, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kStaleToken);
  REQUIRE(store::ExplainFailedCas(Tenant("bob"), "s", 7, false, &stored, nullptr, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kForbidden);
  // Current token, live lease, right tenant: nothing explains it.
  CHECK(store::ExplainFailedCas(Tenant("alice"), "s", 7, false, &stored, nullptr, 1500, &r)
            .IsIOError());
}

TEST_CASE("session rules: an ended session answers how it ended, and a release repeated is ok") {
  store::EndedSession released;
  released.session.tenant = "alice";
  released.session.token = 7;
  released.end = {"released", 1200};
  store::EndedSession expired = released;
  expired.end = {"expired", 1000};
  store::SessionResult r;
  // The same token, a session a release ended: the release succeeds again.
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 7, true, nullptr, &released, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kOk);
  CHECK(r.end.reason == "released");  // a repeat: the allocator does not count it again
  // Another token, a renew, or an end that was no release: session_ended.
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 6, true, nullptr, &released, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kSessionEnded);
  CHECK(r.end.reason == "released");
  CHECK(r.end.ended_at_ms == 1200);
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 7, false, nullptr, &released, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kSessionEnded);
  REQUIRE(store::ExplainFailedCas(Tenant("alice"), "s", 7, true, nullptr, &expired, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kSessionEnded);
  CHECK(r.end.reason == "expired");
  // Another tenant learns nothing of it; an admin does.
  REQUIRE(store::ExplainFailedCas(Tenant("bob"), "s", 7, true, nullptr, &released, 1500, &r).ok());
  CHECK(r.outcome == store::Outcome::kForbidden);
  CHECK(store::AnswerEnded(Tenant("ops", true), "s", expired).outcome ==
        store::Outcome::kSessionEnded);
}

TEST_CASE("session rules: a release's end reason: abandoned, released_by_admin for another tenant's, else released") {
  store::Caller owner;
  owner.tenant = "t1";
  CHECK(std::string(store::ReleaseEndReason(owner, "t1")) == "released");
  store::Caller admin;
  admin.tenant = "ops";
  admin.admin = true;
  CHECK(std::string(store::ReleaseEndReason(admin, "t1")) == "released_by_admin");
  CHECK(std::string(store::ReleaseEndReason(admin, "ops")) == "released");
  store::Caller allocator = owner;
  allocator.abandoning = true;
  CHECK(std::string(store::ReleaseEndReason(allocator, "t1")) == "abandoned");
}
