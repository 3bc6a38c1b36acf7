// The ids a heartbeat reply names unknown (SubmitResult::unknown_ids): the
// reply comes before the write, so an id the storage finds unknown only by
// writing it is named from the request after that write on, and no longer
// once a later write of it finds its container.

#include "batcher/unknown_ids.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "batcher/batcher.h"
#include "tests/batcher/reports.h"
#include "tests/support/engines.h"

namespace {

using batcher::Batcher;
using batcher::RecentlyUnknown;
using batcher::SubmitResult;
using testing::Beat;
using Ids = std::vector<std::string>;

std::vector<store::HeartbeatRow> Rows(const Ids& ids) {
  std::vector<store::HeartbeatRow> rows;
  for (const std::string& id : ids) {
    store::HeartbeatRow row;
    row.container_id = id;
    rows.push_back(std::move(row));
  }
  return rows;
}

// Waits (bounded) until the batcher has written `n` rows and found the rest
// unknown: the request's write is over.
bool WaitWritten(const Batcher& b, uint64_t n) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (b.stats().written.load() + b.stats().unknown.load() < n) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

TEST_CASE("recently unknown: a write's unknown rows are added, its found rows removed, the "
          "oldest evicted past the bound") {
  RecentlyUnknown set(/*capacity=*/3);
  set.Update(Rows({"a", "b", "c"}), {0, 2});
  CHECK(set.Contains("a"));
  CHECK_FALSE(set.Contains("b"));
  CHECK(set.Contains("c"));
  // "a" unknown again is the newest; "d" and "e" then evict "c", the oldest.
  set.Update(Rows({"a", "d", "e"}), {0, 1, 2});
  CHECK(set.size() == 3);
  CHECK_FALSE(set.Contains("c"));
  CHECK(set.Contains("a"));
  // Found by a write: removed.
  set.Update(Rows({"d", "x"}), {1});
  CHECK_FALSE(set.Contains("d"));
  CHECK(set.Contains("x"));
  std::vector<batcher::Heartbeat> items;
  for (const std::string& id : Ids{"x", "b", "a", "x"}) items.push_back(Beat(id)[0]);
  Ids named;
  set.AppendNamed(items, &named);
  CHECK(named == Ids{"x", "a"});
}

TEST_CASE("batcher: an unknown id is named from its second request on, and no longer once it is "
          "registered and written") {
  // sqlite and postgres (one lane, and postgres with several: lanes by hash)
  // find it at write time; SQLite in shards looks every id up at Submit.
  const std::string engine = EDGEALLOC_ENGINES_AND_SHARDS;
  const int pg_writers = GENERATE(1, 2);
  if (engine != "postgres" && pg_writers != 1) return;
  testing::Engine e(engine, {}, pg_writers);
  const bool looked_up_at_submit = engine == "sqlite-sharded";
  Batcher b(e.storage.get());
  b.Start();
  uint64_t sent = 0;
  const auto submit = [&](const std::string& id) {
    SubmitResult r = b.Submit(Beat(id));
    REQUIRE(r.accepted());
    REQUIRE(WaitWritten(b, ++sent));
    return r.unknown_ids;
  };
  CHECK(submit("nope") == (looked_up_at_submit ? Ids{"nope"} : Ids{}));
  CHECK(submit("nope") == Ids{"nope"});
  CHECK(submit("nope") == Ids{"nope"});

  std::promise<store::ContainerResult> registered;
  e->Register({{"nope", "weur", "chrome", 0, "{}", 1, {}}},
              [&](store::ContainerResult r) { registered.set_value(std::move(r)); });
  REQUIRE(registered.get_future().get().outcome == store::Outcome::kOk);
  // The request whose write finds it may still name it (the reply comes
  // first); the next does not.
  const Ids first_after = submit("nope");
  CHECK(first_after == (looked_up_at_submit ? Ids{} : Ids{"nope"}));
  CHECK(submit("nope") == Ids{});
  CHECK(b.recently_unknown().size() == 0);
  b.Stop();
  CHECK(b.stats().written.load() == 2);
  CHECK(b.stats().unknown.load() == 3);
}

}  // namespace
