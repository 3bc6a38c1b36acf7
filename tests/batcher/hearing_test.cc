#include "batcher/hearing.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "batcher/batcher.h"
#include "tests/batcher/reports.h"
#include "tests/support/engines.h"
#include "tests/support/forwarding_storage.h"
#include "tests/support/eventually.h"

namespace {

using batcher::Batcher;
using batcher::BatcherOptions;
using batcher::Hearing;
using std::chrono::milliseconds;

void SleepMs(int64_t ms) { std::this_thread::sleep_for(milliseconds(ms)); }

// Polls `done` until it holds or `limit` passes: no test here assumes how
// fast a loaded machine runs.
bool WaitFor(const std::function<bool()>& done, milliseconds limit = milliseconds(5000)) {
  return testing::Eventually(done, limit);
}

TEST_CASE("hearing: a source that beats late is a span of deafness, and hearing starts again") {
  Hearing h(50);
  const int io = h.AddSource("io");
  h.Beat(io);
  SleepMs(20);
  h.Beat(io);  // on time: nothing
  CHECK(h.spans(Hearing::Cause::kIoStall) == 0);
  SleepMs(150);
  // Late right now, before its beat: deaf now.
  CHECK(h.HearingForMs() == 0);
  h.Beat(io);
  CHECK(h.spans(Hearing::Cause::kIoStall) == 1);
  CHECK(h.deaf_ms(Hearing::Cause::kIoStall) >= 150);
  CHECK(h.HearingForMs() < 50);
  // A removed source is never late.
  h.RemoveSource(io);
  SleepMs(120);
  CHECK(h.HearingForMs() >= 100);
}

TEST_CASE("hearing: a hold deaf now is no hearing, and once clear hearing counts from its "
          "last deaf moment and the watch counts the span") {
  Hearing h(40);
  std::atomic<bool> failing{false};
  std::atomic<int64_t> last{0};
  h.AddHold(Hearing::Cause::kWriteFailing, "writes", [&] {
    if (failing.load()) last.store(base::SteadyNowMs());
    return last.load();
  });
  h.Start();
  failing = true;
  SleepMs(100);
  CHECK(h.HearingForMs() == 0);
  failing = false;
  const int64_t cleared = base::SteadyNowMs();
  REQUIRE(WaitFor([&] { return h.spans(Hearing::Cause::kWriteFailing) == 1; }));
  CHECK(h.deaf_ms(Hearing::Cause::kWriteFailing) >= 50);
  CHECK(h.HearingForMs() <= base::SteadyNowMs() - cleared + 20);
  h.Stop();
}

TEST_CASE("hearing: the start of a stretch of hearing passes over the spans of deafness") {
  Hearing h(1000);
  const int64_t before = base::SteadyNowMs();
  CHECK(h.StartOfHearing(before, 200) == before - 200);
  h.NoteDeaf(Hearing::Cause::kPause, "test", 300);  // [t - 300, t]
  const int64_t t = base::SteadyNowMs();
  // 100 ms heard after the span, 100 more before it.
  CHECK(h.StartOfHearing(t + 100, 200) <= t - 300 - 100);
  CHECK(h.StartOfHearing(t + 100, 200) >= before - 300 - 100);
  // Within the hearing after it: untouched.
  CHECK(h.StartOfHearing(t + 100, 50) == t + 50);
  // A second span inside the first counts once.
  h.NoteDeaf(Hearing::Cause::kIoStall, "test", 100);
  const int64_t t2 = base::SteadyNowMs();
  const int64_t start = h.StartOfHearing(t2, 500);
  CHECK(start <= t2 - 500 - 300);
  CHECK(start >= before - 500 - 300 - 100 - (t2 - before));
}

// A store whose heartbeat writes fail while `failing` is set, as a full
// disk or a database out of reach would; and whose writes of a batch naming
// `slow_id` take slow_ms, as a database slow to commit after an outage.
class FailingWrites : public testing::ForwardingStorage {
 public:
  using ForwardingStorage::ForwardingStorage;
  std::atomic<bool> failing{false};
  std::string slow_id;
  std::atomic<int64_t> slow_ms{0};
  store::Status WriteHeartbeats(int partition, const std::vector<store::HeartbeatRow>& rows,
                                store::HeartbeatWriteResult* result) override {
    if (failing.load()) return store::Status::IOError("injected: heartbeat write fails");
    for (const auto& row : rows) {
      if (row.container_id == slow_id) SleepMs(slow_ms.load());
    }
    return ForwardingStorage::WriteHeartbeats(partition, rows, result);
  }
};

using testing::Beat;
using testing::StatusOf;

// c-1 and c-2, available in weur/chrome.
void RegisterTwo(store::Storage* storage) {
  std::promise<store::ContainerResult> registered;
  storage->Register(
      {{"c-1", "weur", "chrome", 0, "{}", 1, {}}, {"c-2", "weur", "chrome", 0, "{}", 1, {}}},
      [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);
}

// Dead after 1 s, swept every 5 ms.
BatcherOptions FastReaper() {
  BatcherOptions options;
  options.dead_after_ms = 1000;
  options.reaper_interval_ms = 5;
  return options;
}

// The database outage of a node: its heartbeat writes fail for longer than
// dead_after_ms. When they succeed again, the fleet's containers report
// within dead_after_ms, and none may have been judged silent for the time
// the node could not write. A container that then really stops is dead.
TEST_CASE("hearing: heartbeat writes failing longer than dead-after kill nobody once they recover") {
  testing::Engine engine(EDGEALLOC_ENGINES);
  FailingWrites store(engine.storage.get());
  RegisterTwo(engine.storage.get());
  Batcher b(&store, FastReaper());
  b.Start();
  store.failing = true;
  REQUIRE(b.Submit(Beat("c-2")).accepted());  // retried while the writes fail
  SleepMs(1500);
  store.failing = false;
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 1; }));
  // The fleet reports again at once; c-1 last reported before the outage.
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 2; }));
  CHECK(b.stats().dead_marked.load() == 0);
  CHECK(StatusOf(engine.storage.get(), "c-1") == "available");
  CHECK(StatusOf(engine.storage.get(), "c-2") == "available");
  // The watch counts the span once it has heard for a whole period.
  CHECK(WaitFor([&] { return b.hearing().spans(Hearing::Cause::kWriteFailing) >= 1; }));

  // The other side: silent while the node hears, dead in time.
  REQUIRE(WaitFor(
      [&] { return StatusOf(engine.storage.get(), "c-1") == "dead"; }, milliseconds(10000)));
  // On PostgreSQL the two may lie in different lanes, swept one after the
  // other: c-2 (silent longer) is due at the same moment, maybe a lane later.
  CHECK(WaitFor([&] { return StatusOf(engine.storage.get(), "c-2") == "dead"; }));
  b.Stop();
  engine->StopWriters();
}

// A container reports just before the node goes deaf (its heartbeat writes
// fail longer than dead_after_ms: its next reports are refused) and again
// right after; that report's write is slow. The node's watermark holds at
// its acceptance, yet the gap before it is mostly the node's deafness: a
// cutoff of the watermark less dead_after_ms (wall time) ends it, one of
// dead_after_ms of hearing does not.
TEST_CASE("hearing: a report refused while the node was deaf, the next one slow to write, is "
          "no silence") {
  testing::Engine engine(EDGEALLOC_ENGINES);
  FailingWrites store(engine.storage.get());
  RegisterTwo(engine.storage.get());
  Batcher b(&store, FastReaper());
  b.Start();
  REQUIRE(b.Submit(Beat("c-1")).accepted());
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 1; }));
  store.failing = true;
  REQUIRE(b.Submit(Beat("c-2")).accepted());  // fails, retried: the node is deaf
  SleepMs(1500);
  store.slow_id = "c-1";
  store.slow_ms = 2500;
  store.failing = false;
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 2; }));
  REQUIRE(b.Submit(Beat("c-1")).accepted());  // written 2.5 s from now
  // Past dead_after_ms of hearing, while c-1's report is still being written.
  SleepMs(1600);
  CHECK(b.stats().written.load() == 2);
  CHECK(StatusOf(engine.storage.get(), "c-1") == "available");
  // Once it lands, c-1 (and c-2, silent since the node went deaf) fall
  // silent as any container that stops reporting.
  REQUIRE(WaitFor([&] { return b.stats().written.load() == 3; }));
  b.Stop();
  engine->StopWriters();
}

}  // namespace
