#include "kvmirror/history.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace kvmirror {
namespace {

using nlohmann::json;

Snapshot Snap(int64_t as_of_ms, Snapshot::Regions regions) { return Snapshot(as_of_ms, std::move(regions)); }

StatusCounts Counts(int64_t available, int64_t picked) {
  return StatusCounts{.available = available, .picked = picked};
}

// A snapshot of one pool.
Snapshot OnePool(int64_t as_of_ms, const std::string& region, const std::string& pool,
                 StatusCounts counts) {
  Snapshot::Regions r;
  r[region][pool] = counts;
  return Snap(as_of_ms, std::move(r));
}

json Body(const CapacityHistory& h) { return json::parse(*h.Json()); }

TEST_CASE("history: before any sample it says its interval and holds nothing") {
  CapacityHistory h(10'000);
  CHECK(*h.Json() == R"({"interval_ms":10000,"pools_omitted":0,"as_of_ms":[],"regions":{}})");
}

TEST_CASE("history: one sample an interval, the first snapshot of each slot") {
  CapacityHistory h(1000);
  Snapshot::Regions r;
  r["weur"]["chrome"] = StatusCounts{.available = 3, .picked = 5, .draining = 1, .dead = 2};
  CHECK(h.Add(Snap(10'100, r)));
  r["weur"]["chrome"] = Counts(2, 6);
  CHECK_FALSE(h.Add(Snap(10'900, r)));  // same slot: compared, not kept
  CHECK_FALSE(h.Add(Snap(9'000, r)));   // older: never kept
  CHECK(h.Add(Snap(11'000, r)));
  CHECK(*h.Json() ==
        R"({"interval_ms":1000,"pools_omitted":0,"as_of_ms":[10100,11000],"regions":{)"
        R"("weur":{"pools":{"chrome":{"available":[3,2],"picked":[5,6],)"
        R"("slots":[0,0],"slots_used":[0,0],"slots_free":[0,0]}}}}})");
}

TEST_CASE("history: each sample has the pool's slots, used and free beside its containers") {
  CapacityHistory h(1000);
  Snapshot::Regions r;
  r["weur"]["chrome"] = StatusCounts{
      .available = 2, .picked = 1, .slots = 24, .slots_used = 9, .slots_free = 12};
  REQUIRE(h.Add(Snap(1000, r)));
  r["weur"]["chrome"].slots_used = 11;
  r["weur"]["chrome"].slots_free = 10;
  REQUIRE(h.Add(Snap(2000, r)));
  REQUIRE(h.Add(OnePool(3000, "eeur", "firefox", Counts(1, 0))));
  json chrome = Body(h)["regions"]["weur"]["pools"]["chrome"];
  CHECK(chrome["slots"] == json::parse("[24,24,null]"));
  CHECK(chrome["slots_used"] == json::parse("[9,11,null]"));
  CHECK(chrome["slots_free"] == json::parse("[12,10,null]"));
  CHECK(chrome["picked"] == json::parse("[1,1,null]"));
}

TEST_CASE("history: the empty snapshot is never a sample") {
  CapacityHistory h(1000);
  CHECK_FALSE(h.Add(Snapshot()));
  CHECK(Body(h)["as_of_ms"].empty());
}

TEST_CASE("history: a pool missing from a sample is null there, and one that comes late is null before") {
  CapacityHistory h(1000);
  REQUIRE(h.Add(OnePool(1000, "weur", "chrome", Counts(1, 1))));
  REQUIRE(h.Add(OnePool(2000, "eeur", "firefox", Counts(4, 0))));
  json b = Body(h);
  CHECK(b["regions"]["weur"]["pools"]["chrome"]["available"] == json::parse("[1,null]"));
  CHECK(b["regions"]["eeur"]["pools"]["firefox"]["available"] == json::parse("[null,4]"));
  CHECK(b["regions"]["eeur"]["pools"]["firefox"]["picked"] == json::parse("[null,0]"));
}

TEST_CASE("history: only the last samples are kept, and a pool in none of them is dropped") {
  CapacityHistory h(1000, /*max_samples=*/3);
  Snapshot::Regions gone;
  gone["weur"]["old"] = Counts(9, 9);
  gone["weur"]["chrome"] = Counts(0, 1);
  REQUIRE(h.Add(Snap(1000, gone)));
  for (int i = 2; i <= 4; ++i) REQUIRE(h.Add(OnePool(i * 1000, "weur", "chrome", Counts(0, i))));
  json b = Body(h);
  CHECK(b["as_of_ms"] == json::parse("[2000,3000,4000]"));
  CHECK(b["regions"]["weur"]["pools"]["chrome"]["picked"] == json::parse("[2,3,4]"));
  CHECK_FALSE(b["regions"]["weur"]["pools"].contains("old"));
}

TEST_CASE("history: a region whose pools all left the window is dropped too") {
  CapacityHistory h(1000, /*max_samples=*/1);
  REQUIRE(h.Add(OnePool(1000, "apac", "chrome", Counts(1, 0))));
  REQUIRE(h.Add(OnePool(2000, "weur", "chrome", Counts(2, 0))));
  CHECK(*h.Json() == R"({"interval_ms":1000,"pools_omitted":0,"as_of_ms":[2000],"regions":{)"
                     R"("weur":{"pools":{"chrome":{"available":[2],"picked":[0],)"
                     R"("slots":[0],"slots_used":[0],"slots_free":[0]}}}}})");
}

TEST_CASE("history: pools past its bound are left out and counted, the kept ones go on") {
  CapacityHistory h(1000, kHistorySamples, /*max_pools=*/2);
  Snapshot::Regions r;
  r["a"]["p"] = Counts(1, 0);
  r["b"]["p"] = Counts(2, 0);
  r["c"]["p"] = Counts(3, 0);
  r["d"]["p"] = Counts(4, 0);
  REQUIRE(h.Add(Snap(1000, r)));
  REQUIRE(h.Add(Snap(2000, r)));
  json b = Body(h);
  CHECK(b["pools_omitted"] == 2);
  CHECK(b["regions"].size() == 2);
  CHECK(b["regions"]["a"]["pools"]["p"]["available"] == json::parse("[1,1]"));
  CHECK(b["regions"]["b"]["pools"]["p"]["available"] == json::parse("[2,2]"));
}

TEST_CASE("history: names are escaped so the body is always JSON") {
  CapacityHistory h(1000);
  Snapshot::Regions r;
  r["we\"ur"]["ch\\rome\n"] = Counts(1, 2);
  r["\xff"]["p"] = Counts(0, 0);
  REQUIRE(h.Add(Snap(1000, r)));
  json b = Body(h);  // throws if it is not JSON
  CHECK(b["regions"]["we\"ur"]["pools"]["ch\\rome\n"]["picked"] == json::parse("[2]"));
  CHECK(b["regions"].contains("\xef\xbf\xbd"));
}

}  // namespace
}  // namespace kvmirror
