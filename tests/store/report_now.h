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

// A heartbeat row reporting `state` for each of `ids` (all of one
// partition), all stamped with one now, written in one write and durable
// (the write answered ok and wrote every row).
inline void ReportAllNow(store::Storage* s, const std::vector<std::string>& ids,
                         store::ReportedState state) {
  int partition = -1;
  REQUIRE(s->PartitionOf(ids.at(0), &partition).ok());
  const int64_t now = base::NowMs();
  std::vector<store::HeartbeatRow> rows;
  for (const std::string& id : ids) rows.push_back({id, now, std::nullopt, std::nullopt, state});
  store::HeartbeatWriteResult result;
  REQUIRE(s->WriteHeartbeats(partition, rows, &result).ok());
  REQUIRE(result.written == ids.size());
}

// One heartbeat row reporting `state` for `id`, as ReportAllNow.
inline void ReportNow(store::Storage* s, const std::string& id, store::ReportedState state) {
  ReportAllNow(s, {id}, state);
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_STORE_REPORT_NOW_H_
