// A region's heartbeats counted apart in a lane that carries several regions
// (Lane::OldestOf), and the cache the batcher learns containers' regions in
// from its writes (RegionCache).

#include "batcher/region_cache.h"

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "base/clock.h"
#include "batcher/lane.h"

namespace batcher {
namespace {

Heartbeat RegionBeat(const std::string& id, int64_t accepted_ms, int region_index) {
  Heartbeat h;
  h.container_id = id;
  h.accepted_ms = accepted_ms;
  h.region_index = region_index;
  return h;
}

// A write of `ids` (one row each) that found each in the region beside it.
store::HeartbeatWriteResult FoundIn(const std::vector<store::HeartbeatRow>& rows,
                                    const std::vector<std::string>& regions) {
  store::HeartbeatWriteResult result;
  for (size_t i = 0; i < rows.size(); ++i) result.regions.emplace_back(i, regions[i]);
  return result;
}

std::vector<store::HeartbeatRow> RowsOf(const std::vector<std::string>& ids) {
  std::vector<store::HeartbeatRow> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) rows[i].container_id = ids[i];
  return rows;
}

TEST_CASE("lane: a region's oldest heartbeat is its own or one of a region not known") {
  Lane lane(0);
  // Accepted in the future, so MarkQueued keeps each stamp.
  const int64_t t = base::NowMs() + 600000;
  std::vector<Heartbeat> items = {RegionBeat("a", t + 10, 0), RegionBeat("b", t + 20, 1),
                                  RegionBeat("u", t + 30, kUnknownRegion),
                                  RegionBeat("b2", t + 40, 1)};
  lane.MarkQueued(items.data(), items.size());
  CHECK(lane.OldestOf(0) == t + 10);
  CHECK(lane.OldestOf(1) == t + 20);
  CHECK(lane.OldestOf(7) == t + 30);  // a region with nothing queued: the unknown one's
  lane.MarkWritten(items.data(), 2);  // a and b
  CHECK(lane.OldestOf(0) == t + 30);
  CHECK(lane.OldestOf(1) == t + 30);
  lane.MarkWritten(items.data() + 2, 1);  // u
  CHECK(lane.OldestOf(0) == 0);
  CHECK(lane.OldestOf(1) == t + 40);
  lane.MarkWritten(items.data() + 3, 1);
  CHECK(lane.OldestOf(1) == 0);
}

TEST_CASE("region cache: learns containers' regions from writes, and a move") {
  RegionCache cache;
  std::vector<Heartbeat> items = {RegionBeat("c-1", 0, 5), RegionBeat("c-2", 0, 5)};
  cache.Stamp(items.data(), items.size());
  CHECK(items[0].region_index == kUnknownRegion);
  CHECK(items[0].learn_region);
  CHECK(cache.IndexOf("weur") == kUnknownRegion);

  const std::vector<store::HeartbeatRow> rows = RowsOf({"c-1", "c-2"});
  cache.Learn(rows, FoundIn(rows, {"weur", "eeur"}));
  cache.Stamp(items.data(), items.size());
  CHECK(items[0].region_index == cache.IndexOf("weur"));
  CHECK(items[1].region_index == cache.IndexOf("eeur"));
  CHECK(cache.IndexOf("weur") != cache.IndexOf("eeur"));
  CHECK_FALSE(items[0].learn_region);
  CHECK(cache.IndexOf("wnam") == kUnknownRegion);

  // Re-registered in another region: its next write says so.
  cache.Learn(rows, FoundIn(rows, {"eeur", "eeur"}));
  cache.Stamp(items.data(), items.size());
  CHECK(items[0].region_index == cache.IndexOf("eeur"));
}

TEST_CASE("region cache: a full generation starts another, and the last one's ids are learned again") {
  RegionCache cache(/*max_ids=*/2);
  const std::vector<store::HeartbeatRow> first = RowsOf({"c-1", "c-2"});
  cache.Learn(first, FoundIn(first, {"weur", "weur"}));
  const std::vector<store::HeartbeatRow> third = RowsOf({"c-3"});
  cache.Learn(third, FoundIn(third, {"eeur"}));
  CHECK(cache.size() == 3);
  std::vector<Heartbeat> items = {RegionBeat("c-1", 0, 9), RegionBeat("c-3", 0, 9)};
  cache.Stamp(items.data(), items.size());
  // Still counted in its region, and asked of its next write.
  CHECK(items[0].region_index == cache.IndexOf("weur"));
  CHECK(items[0].learn_region);
  CHECK(items[1].region_index == cache.IndexOf("eeur"));
  CHECK_FALSE(items[1].learn_region);
  // Two generations on, an id not heard since is not known.
  const std::vector<store::HeartbeatRow> more = RowsOf({"c-4", "c-5", "c-6"});
  cache.Learn(more, FoundIn(more, {"eeur", "eeur", "eeur"}));
  cache.Stamp(items.data(), 1);
  CHECK(items[0].region_index == kUnknownRegion);
}

}  // namespace
}  // namespace batcher
