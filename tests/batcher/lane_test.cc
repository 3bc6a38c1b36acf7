#include "batcher/lane.h"

#include <vector>

#include <catch2/catch.hpp>

#include "base/clock.h"

namespace batcher {
namespace {

std::vector<Heartbeat> Items(std::vector<int64_t> accepted_ms) {
  std::vector<Heartbeat> items;
  for (int64_t ms : accepted_ms) {
    Heartbeat h;
    h.container_id = "c-" + std::to_string(items.size());
    h.accepted_ms = ms;
    items.push_back(std::move(h));
  }
  return items;
}

TEST_CASE("lane: slots are reserved whole or not at all, up to the bound") {
  Lane lane(2);
  CHECK(lane.partition() == 2);
  CHECK(lane.Reserve(3, 5));
  CHECK_FALSE(lane.Reserve(3, 5));  // 6 > 5: none of the three taken
  CHECK(lane.depth() == 3);
  CHECK(lane.Reserve(2, 5));
  CHECK(lane.depth() == 5);
  lane.Unreserve(4);
  CHECK(lane.depth() == 1);
}

TEST_CASE("lane: the watermark stays before the oldest item queued until it is written") {
  Lane lane(0);
  const int64_t before = base::NowMs();
  CHECK(lane.Watermark() >= before);  // nothing queued: now

  // Stamped no earlier than now; an item stamped later keeps its stamp.
  std::vector<Heartbeat> first = Items({0, 0});
  std::vector<Heartbeat> later = Items({before + 60000});
  lane.MarkQueued(first.data(), first.size());
  lane.MarkQueued(later.data(), later.size());
  CHECK(first[0].accepted_ms >= before);
  CHECK(first[1].accepted_ms == first[0].accepted_ms);
  CHECK(later[0].accepted_ms == before + 60000);
  CHECK(lane.Watermark() == first[0].accepted_ms - 1);

  // One of the two written: the other still holds the watermark.
  lane.MarkWritten(first.data(), 1);
  CHECK(lane.Watermark() == first[0].accepted_ms - 1);
  lane.MarkWritten(first.data() + 1, 1);
  // Only the later item is left; its stamp is ahead of now, so now is the bound.
  const int64_t now = base::NowMs();
  CHECK(lane.Watermark() >= now);
  CHECK(lane.Watermark() < later[0].accepted_ms);
  lane.MarkWritten(later.data(), later.size());
  CHECK(lane.Watermark() >= now);
}

TEST_CASE("lane: failing writes hold the hearing until they succeed again") {
  Lane lane(0);
  CHECK_FALSE(lane.failing());
  CHECK(lane.HearingHoldMs() == 0);  // never failed
  lane.NoteWriteFailed(base::SteadyNowMs());
  CHECK(lane.failing());
  const int64_t held_at = base::SteadyNowMs();
  CHECK(lane.HearingHoldMs() >= held_at);  // now, while failing
  lane.NoteWriteSucceeded();
  CHECK_FALSE(lane.failing());
  const int64_t recovered = lane.HearingHoldMs();  // the moment writes came back
  CHECK(recovered >= held_at);
  CHECK(recovered <= base::SteadyNowMs());
}

}  // namespace
}  // namespace batcher
