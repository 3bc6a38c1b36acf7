#ifndef EDGEALLOC_TESTS_STORE_REPORT_NOW_H_
#define EDGEALLOC_TESTS_STORE_REPORT_NOW_H_

// A container's report, as the batcher would write it, without the batcher:
// for the storage tests of both engines.

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/storage.h"

namespace testing {

// One heartbeat row reporting `state` for `id`, stamped now, written and
// durable (the write answered ok and wrote that one row).
inline void ReportNow(store::Storage* s, const std::string& id, store::ReportedState state) {
  int partition = -1;
  REQUIRE(s->PartitionOf(id, &partition).ok());
  store::HeartbeatWriteResult result;
  const std::vector<store::HeartbeatRow> rows = {
      {id, base::NowMs(), std::nullopt, std::nullopt, state}};
  REQUIRE(s->WriteHeartbeats(partition, rows, &result).ok());
  REQUIRE(result.written == 1);
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_STORE_REPORT_NOW_H_
