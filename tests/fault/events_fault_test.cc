// The event log under a failing write (tests/support/fault_vfs.h): a claim
// whose commit fails leaves no event, and the next one's is there alone.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "store/storage.h"
#include "tests/support/await.h"
#include "tests/support/fault_vfs.h"
#include "tests/support/requests.h"
#include "tests/support/temp_dir.h"

namespace {

std::vector<store::Event> EveryEvent(store::Storage* s) {
  store::EventCursor start;
  REQUIRE(store::EventCursor::Parse("", s->event_streams(), &start));
  store::EventPage page;
  REQUIRE(s->ReadEvents({}, start, &page).ok());
  return page.events;
}

}  // namespace

TEST_CASE("events: a claim whose commit fails at its WAL write leaves no event", "[fault]") {
  testing::FaultVfs& vfs = testing::FaultVfs::Install();
  vfs.Reset();
  testing::TempDir dir;
  store::StorageOptions options;
  options.db = dir.File("pool.db");
  options.sync = store::Sync::kFull;
  std::unique_ptr<store::Storage> s;
  REQUIRE(store::OpenStorage(options, &s).ok());
  auto registered = testing::Await<store::ContainerResult>(
      [&](auto cb) { s->Register({testing::Spec("c1", "weur", "p")}, cb); });
  REQUIRE(registered.outcome == store::Outcome::kOk);

  testing::FaultSpec fail;
  fail.op = testing::FaultOp::kWrite;
  fail.target = testing::FaultTarget::kWal;
  vfs.Arm(fail);
  store::ClaimRequest req = testing::Req("weur", "t1", "p");
  req.lease_ms = 60000;
  auto failed =
      testing::Await<store::SessionResult>([&](auto cb) { s->Claim(req, cb); });
  CHECK(vfs.fired() == 1);
  CHECK(failed.outcome == store::Outcome::kError);
  vfs.Disarm();

  auto claimed = testing::Await<store::SessionResult>([&](auto cb) { s->Claim(req, cb); });
  REQUIRE(claimed.outcome == store::Outcome::kOk);
  std::vector<std::string> seen;
  for (const store::Event& e : EveryEvent(s.get())) seen.push_back(e.type + " " + e.session_id);
  CHECK(seen == std::vector<std::string>{"container.registered ",
                                         "session.claimed " + claimed.session.session_id});
  s.reset();
  vfs.Reset();
}
