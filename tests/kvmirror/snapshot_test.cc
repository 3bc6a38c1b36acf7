#include "kvmirror/snapshot.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

namespace kvmirror {
namespace {

StatusCounts Counts(int64_t available, int64_t picked, int64_t draining, int64_t dead) {
  return StatusCounts{available, picked, draining, dead};
}

TEST_CASE("snapshot: the empty snapshot has no data and says so with a null age") {
  Snapshot s;
  CHECK(s.as_of_ms() == 0);
  CHECK(s.regions().empty());
  CHECK(s.totals() == StatusCounts{});
  CHECK(s.AgeMs(1'700'000'000'000) == -1);
  CHECK(s.ToCapacityJson(1'700'000'000'000) == R"({"as_of_ms":0,"age_ms":null,"version":0,"regions":{}})");
}

TEST_CASE("snapshot: capacity JSON has docs/api.md's shape, names in sorted order") {
  Snapshot::Regions regions;
  regions["weur"]["chrome"] = Counts(3, 5, 0, 1);
  regions["weur"]["android"] = Counts(1, 0, 2, 0);
  regions["apac"]["chrome"] = Counts(7, 0, 0, 0);
  Snapshot s(1'700'000'000'000, regions);
  CHECK(s.ToCapacityJson(1'700'000'000'012) ==
        R"({"as_of_ms":1700000000000,"age_ms":12,"version":0,"regions":{)"
        R"("apac":{"pools":{"chrome":{"available":7,"picked":0,"draining":0,"dead":0,"drained":0,"slots":0,"slots_used":0,"slots_free":0}}},)"
        R"("weur":{"pools":{"android":{"available":1,"picked":0,"draining":2,"dead":0,"drained":0,"slots":0,"slots_used":0,"slots_free":0},)"
        R"("chrome":{"available":3,"picked":5,"draining":0,"dead":1,"drained":0,"slots":0,"slots_used":0,"slots_free":0}}}}})");
}

TEST_CASE("snapshot: a region without pools renders as an empty pools object") {
  Snapshot::Regions regions;
  regions["weur"];
  Snapshot s(5, regions);
  CHECK(s.ToCapacityJson(5) == R"({"as_of_ms":5,"age_ms":0,"version":0,"regions":{"weur":{"pools":{}}}})");
}

TEST_CASE("snapshot: age is now minus as_of, never negative when the clock steps back") {
  Snapshot s(1000, {});
  CHECK(s.AgeMs(1250) == 250);
  CHECK(s.AgeMs(1000) == 0);
  CHECK(s.AgeMs(900) == 0);
  CHECK(s.ToCapacityJson(900) == R"({"as_of_ms":1000,"age_ms":0,"version":0,"regions":{}})");
}

TEST_CASE("snapshot: totals, region totals and lookups add up the counts") {
  Snapshot::Regions regions;
  regions["weur"]["chrome"] = Counts(3, 5, 0, 1);
  regions["weur"]["android"] = Counts(1, 0, 2, 0);
  regions["apac"]["chrome"] = Counts(7, 0, 0, 0);
  Snapshot s(1, regions);
  CHECK(s.totals() == Counts(11, 5, 2, 1));
  CHECK(s.totals().total() == 19);
  CHECK(s.RegionTotals("weur") == Counts(4, 5, 2, 1));
  CHECK(s.RegionTotals("nowhere") == StatusCounts{});
  REQUIRE(s.Find("weur", "chrome") != nullptr);
  CHECK(*s.Find("weur", "chrome") == Counts(3, 5, 0, 1));
  CHECK(s.Find("weur", "firefox") == nullptr);
  CHECK(s.Find("eeur", "chrome") == nullptr);
}

TEST_CASE("snapshot: a status name outside the schema's four is refused, not guessed") {
  StatusCounts c;
  CHECK(c.Add("available", 2));
  CHECK(c.Add("picked", 3));
  CHECK(c.Add("draining", 4));
  CHECK(c.Add("dead", 5));
  CHECK_FALSE(c.Add("retired", 6));
  CHECK_FALSE(c.Add("Available", 6));
  CHECK(c == Counts(2, 3, 4, 5));
}

TEST_CASE("snapshot: merge sums the parts and is as old as its oldest part") {
  Snapshot::Regions a;
  a["weur"]["chrome"] = Counts(1, 2, 0, 0);
  Snapshot::Regions b;
  b["apac"]["chrome"] = Counts(4, 0, 0, 1);
  b["weur"]["chrome"] = Counts(1, 1, 1, 1);  // cannot happen with a ShardMap; still adds
  auto merged = Snapshot::Merge(
      {std::make_shared<const Snapshot>(2000, a), std::make_shared<const Snapshot>(1500, b)});
  CHECK(merged->as_of_ms() == 1500);
  CHECK(merged->regions().size() == 2);
  CHECK(*merged->Find("weur", "chrome") == Counts(2, 3, 1, 1));
  CHECK(*merged->Find("apac", "chrome") == Counts(4, 0, 0, 1));
  CHECK(merged->totals() == Counts(6, 3, 1, 2));
}

TEST_CASE("snapshot: merge of one part is that part, and a missing part makes the age unknown") {
  auto only = std::make_shared<const Snapshot>(42, Snapshot::Regions{});
  CHECK(Snapshot::Merge({only}) == only);

  Snapshot::Regions a;
  a["weur"]["chrome"] = Counts(1, 0, 0, 0);
  auto partial = Snapshot::Merge({std::make_shared<const Snapshot>(2000, a), nullptr});
  CHECK(partial->as_of_ms() == 0);
  CHECK(partial->Find("weur", "chrome") != nullptr);
  CHECK(partial->ToCapacityJson(3000).find(R"("age_ms":null)") != std::string::npos);

  CHECK(Snapshot::Merge({})->as_of_ms() == 0);
}

TEST_CASE("snapshot: names are escaped in the capacity JSON") {
  Snapshot::Regions regions;
  regions["we\"ur"]["a\\b\n"] = Counts(1, 0, 0, 0);
  Snapshot s(10, regions);
  CHECK(s.ToCapacityJson(10) ==
        R"({"as_of_ms":10,"age_ms":0,"version":0,"regions":{"we\"ur":{"pools":{"a\\b\u000a":)"
        R"({"available":1,"picked":0,"draining":0,"dead":0,"drained":0,"slots":0,"slots_used":0,"slots_free":0}}}}})");
}

TEST_CASE("snapshot: the drained ids of the parts are merged, and drained is counted apart") {
  Snapshot::Regions a, b;
  a["weur"]["chrome"] = Counts(1, 0, 2, 0);
  a["weur"]["chrome"].drained = 1;
  b["weur"]["chrome"] = Counts(0, 0, 1, 0);
  b["weur"]["chrome"].drained = 1;
  auto ids = [](std::vector<std::string> v) {
    return std::make_shared<const DrainedIds>(v.begin(), v.end());
  };
  auto one = std::make_shared<const Snapshot>(1000, a, ids({"w-1"}));
  auto two = std::make_shared<const Snapshot>(1000, b, ids({"w-2", "w-3"}));
  auto none = std::make_shared<const Snapshot>(1000, Snapshot::Regions{});
  auto merged = Snapshot::Merge({one, none, two});
  CHECK(merged->Drained("w-1"));
  CHECK(merged->Drained("w-3"));
  CHECK_FALSE(merged->Drained("w-4"));
  CHECK(merged->drained_ids()->size() == 3);
  CHECK(merged->Find("weur", "chrome")->drained == 2);
  CHECK(merged->totals().total() == 4);  // drained is no state of its own
  // One part with drained ids: its set is shared, not copied.
  CHECK(Snapshot::Merge({none, one})->drained_ids() == one->drained_ids());
  CHECK_FALSE(Snapshot().Drained("w-1"));
}

}  // namespace
}  // namespace kvmirror
