#ifndef EDGEALLOC_TESTS_STORE_MIGRATED_SESSIONS_H_
#define EDGEALLOC_TESTS_STORE_MIGRATED_SESSIONS_H_

// What both engines' migration tests ask of a storage opened on a database
// that an older release wrote with sessions in it (live ones, one with an
// idempotency key, and an ended one): every session works on as before.

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "store/storage.h"
#include "tests/support/await.h"
#include "tests/support/requests.h"

namespace testing {

// The sessions the old database held, all in weur pool p: `keyed` (tenant
// t1, container c-1, token 7, key k1, labels {"job":"a"}), `plain` (tenant
// t2, container c-2, token 3) and `ended` (tenant t1, released).
struct MigratedSessions {
  std::string keyed;
  std::string plain;
  std::string ended;
  int64_t lease_expires_at_ms = 0;
  // The least token a new claim may get: above c-2's 3 on SQLite (tokens
  // grow per container), the sequence's start on PostgreSQL.
  int64_t min_new_token = 0;
};

inline void CheckMigratedSessionsWork(store::Storage* s, const MigratedSessions& m) {
  auto live = s->GetSession(Tenant("t1"), m.keyed);
  REQUIRE(live.outcome == store::Outcome::kOk);
  CHECK(live.session.container_id == "c-1");
  CHECK(live.session.token == 7);
  CHECK(live.session.slot == 0);
  CHECK(live.session.labels == R"({"job":"a"})");
  CHECK(live.session.lease_expires_at_ms == m.lease_expires_at_ms);
  const auto held = s->GetContainer("c-1").container;
  CHECK(held.session_id == m.keyed);
  CHECK(held.slots_used == 1);

  // The key still names its session.
  store::ClaimRequest retry = Req("weur", "t1", "p");
  retry.idempotency_key = "k1";
  retry.lease_ms = 60000;
  auto replay = Await<store::SessionResult>([&](auto cb) { s->Claim(retry, cb); });
  CHECK(replay.outcome == store::Outcome::kReplayed);
  CHECK(replay.session.session_id == m.keyed);

  // The history is kept, with its reason.
  auto gone = s->GetSession(Tenant("t1"), m.ended);
  CHECK(gone.outcome == store::Outcome::kSessionEnded);
  CHECK(gone.end.reason == "released");

  // A migrated session is released with its token; its slot is free again,
  // and a new claim's token is above every one before.
  auto released =
      Await<store::SessionResult>([&](auto cb) { s->Release(Tenant("t2"), m.plain, 3, cb); });
  CHECK(released.outcome == store::Outcome::kOk);
  CHECK(s->GetContainer("c-2").container.status == "available");
  store::ClaimRequest fresh = Req("weur", "t3", "p");
  fresh.lease_ms = 60000;
  auto claim = Await<store::SessionResult>([&](auto cb) { s->Claim(fresh, cb); });
  REQUIRE(claim.outcome == store::Outcome::kOk);
  CHECK(claim.session.container_id != "c-1");
  CHECK(claim.session.token >= m.min_new_token);
}

// The attributes an older database gave c-1 (held by `held`, gpu a100), c-3
// (free, a100) and c-4 (free, h100) are kept, and a selector matches them:
// c-3 is the only free a100; nothing is a tpu.
inline void CheckMigratedAttributesWork(store::Storage* s, const std::string& held) {
  CHECK(s->GetContainer("c-1").container.attributes == R"({"gpu":"a100"})");
  CHECK(s->GetContainer("c-1").container.session_id == held);
  CHECK(s->GetContainer("c-4").container.attributes == R"({"gpu":"h100"})");
  store::ClaimRequest a100 = Req("weur", "t2", "p");
  a100.lease_ms = 60000;
  a100.selector = {{"gpu", {"a100"}}};
  auto claim = Await<store::SessionResult>([&](auto cb) { s->Claim(a100, cb); });
  REQUIRE(claim.outcome == store::Outcome::kOk);
  CHECK(claim.session.container_id == "c-3");
  store::ClaimRequest tpu = a100;
  tpu.selector = {{"gpu", {"tpu"}}};
  auto none = Await<store::SessionResult>([&](auto cb) { s->Claim(tpu, cb); });
  CHECK(none.outcome == store::Outcome::kNoMatch);
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_STORE_MIGRATED_SESSIONS_H_
