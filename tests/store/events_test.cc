// The event log (docs/api.md, "Events") on every engine: SQLite, SQLite in
// shard files and PostgreSQL. Each change writes its event in its own
// transaction; a reader resumes after the last seq it saw.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "store/storage.h"
#include "tests/store/report_now.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/requests.h"

namespace {

using store::Outcome;
using testing::Await;
using testing::Engine;
using testing::ReportNow;
using testing::Tenant;

void Register(store::Storage* s, const std::string& id, const std::string& region = "weur") {
  auto r = Await<store::ContainerResult>(
      [&](auto cb) { s->Register({testing::Spec(id, region, "p")}, cb); });
  REQUIRE(r.outcome == Outcome::kOk);
}

store::Session Claim(store::Storage* s, const std::string& tenant,
                     const std::string& region = "weur") {
  store::ClaimRequest req = testing::Req(region, tenant, "p");
  req.lease_ms = 60000;
  auto r = Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
  REQUIRE(r.outcome == Outcome::kOk);
  return r.session;
}

store::EventCursor Start(store::Storage* s) {
  store::EventCursor c;
  REQUIRE(store::EventCursor::Parse("", s->event_streams(), &c));
  return c;
}

// Every event after `after` that `query` keeps, page by page; *end is the
// cursor after the last page.
std::vector<store::Event> ReadAll(store::Storage* s, store::EventQuery query,
                                  store::EventCursor after, store::EventCursor* end = nullptr) {
  std::vector<store::Event> all;
  for (int pages = 0; pages < 1000; ++pages) {
    store::EventPage page;
    const store::Status st = s->ReadEvents(query, after, &page);
    INFO(st.ToString());
    REQUIRE(st.ok());
    REQUIRE_FALSE(page.expired);
    all.insert(all.end(), page.events.begin(), page.events.end());
    if (page.events.empty() && page.next.seqs == after.seqs) break;
    after = page.next;
  }
  if (end != nullptr) *end = after;
  return all;
}

std::vector<std::string> TypesOf(const std::vector<store::Event>& events,
                                 const std::string& container) {
  std::vector<std::string> types;
  for (const auto& e : events) {
    if (e.container_id == container) types.push_back(e.type);
  }
  return types;
}

}  // namespace

TEST_CASE("events: each change of a container and its session writes its event, in order") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  Register(s, "c1");
  const store::Session held = Claim(s, "t1");
  auto renewed = Await<store::SessionResult>([&](auto cb) {
    s->Renew(Tenant("t1"), held.session_id, held.token, 120000, cb);
  });
  REQUIRE(renewed.outcome == Outcome::kOk);
  auto released = Await<store::SessionResult>(
      [&](auto cb) { s->Release(Tenant("t1"), held.session_id, held.token, cb); });
  REQUIRE(released.outcome == Outcome::kOk);
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { s->Drain("c1", cb); }).outcome ==
          Outcome::kOk);
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { s->Undrain("c1", cb); }).outcome ==
          Outcome::kOk);
  ReportNow(s, "c1", store::ReportedState::kDraining);
  ReportNow(s, "c1", store::ReportedState::kReady);
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { s->Remove("c1", cb); }).outcome ==
          Outcome::kOk);

  const std::vector<store::Event> events = ReadAll(s, {}, Start(s));
  CHECK(TypesOf(events, "c1") ==
        std::vector<std::string>{"container.registered", "session.claimed", "session.renewed",
                                 "session.ended", "container.drained", "container.undrained",
                                 "container.available", "container.draining",
                                 "container.available", "container.deleted"});
  for (size_t i = 1; i < events.size(); ++i) CHECK(events[i].seq > events[i - 1].seq);
  for (const auto& ev : events) {
    CHECK(ev.region == "weur");
    CHECK(ev.pool == "p");
    CHECK(ev.at_ms > 0);
    if (ev.type.rfind("session.", 0) == 0) {
      CHECK(ev.session_id == held.session_id);
      CHECK(ev.tenant == "t1");
      CHECK(ev.token == held.token);
      CHECK(ev.slot == 0);
    }
    if (ev.type == "session.ended") CHECK(ev.end_reason == "released");
  }
}

TEST_CASE("events: deaths, expiries and deletions end sessions with their reasons") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  Register(s, "dies");
  Claim(s, "t1");
  const int64_t future = base::NowMs() + 60000;
  for (int p = 0; p < s->partitions(); ++p) {
    store::SilenceSweep sweep;
    REQUIRE(s->SweepSilentContainers(p, [future] { return future; }, store::HeldPools{}, 100,
                                     &sweep)
                .ok());
  }
  const std::vector<store::Event> events = ReadAll(s, {}, Start(s));
  REQUIRE(TypesOf(events, "dies") == std::vector<std::string>{"container.registered",
                                                              "session.claimed", "session.ended",
                                                              "container.dead"});
  CHECK(events[2].end_reason == "container_dead");
}

// A release that frees the last slot of a container that reported itself
// dead makes it dead: container.dead after the session's end (version 16
// moved that event's trigger off the freed slot's statement).
TEST_CASE("events: the last session of a container that reported itself dead ends, then it dies") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  Register(s, "said-dead");
  const store::Session held = Claim(s, "t1");
  ReportNow(s, "said-dead", store::ReportedState::kDead);
  REQUIRE(s->GetContainer("said-dead").container.status != "dead");
  auto released = Await<store::SessionResult>(
      [&](auto cb) { s->Release(Tenant("t1"), held.session_id, held.token, cb); });
  REQUIRE(released.outcome == Outcome::kOk);
  CHECK(s->GetContainer("said-dead").container.status == "dead");
  const std::vector<store::Event> events = ReadAll(s, {}, Start(s));
  CHECK(TypesOf(events, "said-dead") ==
        std::vector<std::string>{"container.registered", "session.claimed", "session.ended",
                                 "container.dead"});
}

// A session's events carry its own instants: an expiry's end is its lease's
// end, as the history's ended_at_ms (not the sweep's now).
TEST_CASE("events: an expired session's end is at its lease's end") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  Register(s, "short");
  store::ClaimRequest req = testing::Req("weur", "t1", "p");
  req.lease_ms = 1;
  auto claimed = Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
  REQUIRE(claimed.outcome == Outcome::kOk);
  const int64_t lease_end = claimed.session.lease_expires_at_ms;
  while (base::NowMs() <= lease_end + 50) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int64_t ended = 0;
  for (int p = 0; p < s->partitions(); ++p) REQUIRE(s->SweepExpiredLeases(p, 100, &ended).ok());
  const std::vector<store::Event> events = ReadAll(s, {"t1", "session.ended", 100}, Start(s));
  REQUIRE(events.size() == 1);
  CHECK(events[0].end_reason == "expired");
  CHECK(events[0].at_ms == lease_end);
}

TEST_CASE("events: a tenant reads its own sessions' events, type and limit page them") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  // Two regions, so that sharded SQLite writes two files' streams.
  for (int i = 0; i < 6; ++i) Register(s, "c" + std::to_string(i), i % 2 ? "weur" : "eeur");
  for (int i = 0; i < 3; ++i) {
    Claim(s, "t1", i % 2 ? "weur" : "eeur");
    Claim(s, "t2", i % 2 ? "eeur" : "weur");
  }
  store::EventQuery mine;
  mine.tenant = "t1";
  mine.limit = 1;
  store::EventCursor end;
  const auto t1 = ReadAll(s, mine, Start(s), &end);
  REQUIRE(t1.size() == 3);
  for (const auto& ev : t1) CHECK(ev.tenant == "t1");
  // Nothing new: the cursor at the end stays there.
  CHECK(ReadAll(s, mine, end).empty());

  store::EventQuery registered;
  registered.type = "container.registered";
  registered.limit = 4;
  CHECK(ReadAll(s, registered, Start(s)).size() == 6);
  CHECK(ReadAll(s, {}, Start(s)).size() == 12);
}

TEST_CASE("events: past the retention a cursor is expired and told where to resume") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  for (int i = 0; i < 3; ++i) Register(s, "c" + std::to_string(i));
  store::EventCursor end;
  REQUIRE(ReadAll(s, {}, Start(s), &end).size() == 3);
  int64_t pruned = 0;
  for (int p = 0; p < s->partitions(); ++p) {
    int64_t n = 0;
    // A retention of -1 s: everything is older than it.
    REQUIRE(s->PruneEvents(p, -1000, 1000, &n).ok());
    pruned += n;
  }
  // SQLite keeps a file's newest event, so that seq, its rowid, never goes
  // back (store/sqlite/events_sql.h, version 17); one region is one file.
  CHECK(pruned == (e.engine == "postgres" ? 3 : 2));
  store::EventPage page;
  REQUIRE(s->ReadEvents({}, Start(s), &page).ok());
  CHECK(page.expired);
  // Resuming where it says reads on; so does the reader that was up to date.
  Register(s, "c9");
  CHECK(TypesOf(ReadAll(s, {}, page.oldest), "c9") ==
        std::vector<std::string>{"container.registered"});
  CHECK(ReadAll(s, {}, end).size() == 1);
}

TEST_CASE("events: a reader waiting on the commit signal is woken by a commit") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  const uint64_t seen = s->commit_signal()->commits();
  Register(s, "c1");
  CHECK(s->commit_signal()->WaitAfter(
      seen, std::chrono::steady_clock::now() + std::chrono::seconds(30)));
}

TEST_CASE("renew: a shorter lease keeps the later end unless it says shorten") {
  Engine e(EDGEALLOC_ENGINES_AND_SHARDS);
  store::Storage* s = e.storage.get();
  Register(s, "c1");
  const store::Session held = Claim(s, "t1");  // a lease of 60 s
  auto renew = [&](int64_t lease_ms, bool shorten) {
    auto r = Await<store::SessionResult>([&](auto cb) {
      s->Renew(Tenant("t1"), held.session_id, held.token, lease_ms, shorten, cb);
    });
    REQUIRE(r.outcome == Outcome::kOk);
    return r.session.lease_expires_at_ms;
  };
  CHECK(renew(1000, false) == held.lease_expires_at_ms);
  const int64_t shortened = renew(1000, true);
  CHECK(shortened < held.lease_expires_at_ms - 30000);
  CHECK(renew(120000, false) > held.lease_expires_at_ms);
  // The renew that changed nothing wrote no event; the other two did.
  store::EventQuery renewals;
  renewals.type = "session.renewed";
  CHECK(ReadAll(s, renewals, Start(s)).size() == 2);
}
