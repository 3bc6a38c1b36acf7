#ifndef EDGEALLOC_TESTS_BATCHER_REPORTS_H_
#define EDGEALLOC_TESTS_BATCHER_REPORTS_H_

// What the batcher tests that drive a fleet through a real store share: one
// `ready` report of a container, and a container's status as stored.

#include <string>
#include <utility>
#include <vector>

#include "batcher/batcher.h"
#include "store/storage.h"

namespace testing {

inline std::string StatusOf(store::Storage* s, const std::string& id) {
  return s->GetContainer(id).container.status;
}

inline std::vector<batcher::Heartbeat> Beat(const std::string& id) {
  batcher::Heartbeat h;
  h.container_id = id;
  h.state = batcher::Heartbeat::State::kReady;
  std::vector<batcher::Heartbeat> v;
  v.push_back(std::move(h));
  return v;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_BATCHER_REPORTS_H_
